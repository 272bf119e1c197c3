"""Tool-output budget: an output over the budget goes to a file in the session folder and the
model gets a head/tail preview plus the path. The preview is decided once and stored in the
message, so a resumed session replays the same bytes.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_BUDGET_CHARS = 24_000
HEAD_CHARS = 6_000
TAIL_CHARS = 4_000


def apply_budget(text: str, *, folder: Path, name: str, budget: int = DEFAULT_BUDGET_CHARS) -> str:
    if len(text) <= budget:
        return text
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.txt"
    path.write_text(text, encoding="utf-8")
    head, tail = text[:HEAD_CHARS], text[-TAIL_CHARS:]
    omitted = len(text) - len(head) - len(tail)
    return (
        f"{head}\n[... {omitted} characters omitted; the full output ({len(text)} characters) is saved at "
        f"{path} — read parts of it with read_file (offset/limit) or grep on that path]\n{tail}"
    )
