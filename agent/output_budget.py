"""Tool-output budget: an output over the budget goes to a file in the session folder and the
model gets a head/tail preview plus the path. The preview is decided once and stored in the
message, so a resumed session replays the same bytes.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_BUDGET_CHARS = 24_000
HEAD_CHARS = 6_000
TAIL_CHARS = 4_000
WRAP_CHARS = 1_000  # the saved text's longest line: a few read_file lines stay under the budget
WINDOW_SHARE = 4  # one output may fill at most a quarter of a small window (tokens ~ chars / 4)
MIN_BUDGET_CHARS = 2_000


def budget_for_window(window_tokens: int, budget: int = DEFAULT_BUDGET_CHARS) -> int:
    """The budget for a model whose window is ``window_tokens``: 24,000 characters is 6,000
    tokens, which in an 8,192-token window (the embedded model, a small Ollama window) left one
    listing holding more than half of it, so every later step compacted and kept it anyway (the
    latest rounds stay verbatim). Unknown windows (0) keep ``budget``."""
    if window_tokens <= 0:
        return budget
    return min(budget, max(MIN_BUDGET_CHARS, window_tokens * 4 // WINDOW_SHARE))


def apply_budget(text: str, *, folder: Path, name: str, budget: int = DEFAULT_BUDGET_CHARS) -> str:
    if len(text) <= budget:
        return text
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.txt"
    paged = _paged(text)
    path.write_text(paged, encoding="utf-8")
    # the preview keeps the default's shares (a quarter head, a sixth tail) of a smaller budget
    head, tail = text[: min(HEAD_CHARS, budget // 4)], text[-min(TAIL_CHARS, budget // 6) :]
    omitted = len(text) - len(head) - len(tail)
    wrapped = f"; lines over {WRAP_CHARS:,} characters are wrapped there" if paged != text else ""
    return (
        f"{head}\n[... {omitted} characters omitted; the full output ({len(text)} characters) is saved at "
        f"{path} — read parts of it with read_file (offset/limit{wrapped}) or grep on that path]\n{tail}"
    )


def _paged(text: str) -> str:
    """The text with every line over ``WRAP_CHARS`` cut into lines of that length: read_file's
    offset and limit count lines, and one long line (a minified file, a JSON reply) read whole
    is over the budget again, so its middle could never be read."""
    if all(len(line) <= WRAP_CHARS for line in text.split("\n")):
        return text
    return "\n".join(
        "\n".join(line[i : i + WRAP_CHARS] for i in range(0, len(line), WRAP_CHARS)) or line
        for line in text.split("\n")
    )
