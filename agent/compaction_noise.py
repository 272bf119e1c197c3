"""Compaction's first tier, noise: superseded file reads and large search results the agent
has already acted on become stubs that name the archive holding their text, and status blocks a
later one supersedes are dropped. The message structure is kept, and so are the latest rounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.types import Message

SEARCH_TOOLS = {"search_code", "grep", "list_files", "tool_search"}
EDIT_TOOLS = {"edit_file", "write_file"}


def drop_noise(
    messages: list[Message],
    *,
    keep_rounds: int,
    min_chars: int,
    archive_path: Path,
    archive: list[str],
) -> list[Message]:
    """The messages with noise stubbed; the stubbed texts are appended to ``archive`` (the parts
    of the file at ``archive_path``). Search results under ``min_chars`` are not noise."""
    calls: dict[str, tuple[int, str, dict[str, Any]]] = {}
    for i, m in enumerate(messages):
        for b in m.get("content", []):
            if b.get("type") == "tool_use":
                calls[b["id"]] = (i, b["name"], b.get("input") or {})
    protected_from = protected_start(messages, keep_rounds)
    out = []
    for i, m in enumerate(messages):
        if i == 0 or i >= protected_from or m.get("role") != "user":
            out.append(m)
            continue
        content = []
        for b in m.get("content", []):
            if _is_status(b) and len(m["content"]) > 1:
                continue  # the latest status, in the protected rounds, supersedes it
            why = _noise_reason(b, calls, i, min_chars)
            if why:
                archive.append(
                    f"=== tool result {b['tool_use_id']} (message {i}) ===\n{b['content']}"
                )
                b = {
                    **b,
                    "content": f"[compacted: {why}; the full text is in {archive_path} under {b['tool_use_id']}]",
                }
            content.append(b)
        out.append({**m, "content": content})
    return out


def protected_start(messages: list[Message], keep_rounds: int) -> int:
    """Index of the first message of the latest ``keep_rounds`` rounds, which stay verbatim."""
    return max(1, len(messages) - 2 * max(1, keep_rounds))


def _noise_reason(block: dict[str, Any], calls: dict[str, Any], index: int, min_chars: int) -> str:
    if block.get("type") != "tool_result" or not isinstance(block.get("content"), str):
        return ""
    if block["content"].startswith("[compacted:") or "<skill" in block["content"]:
        return ""
    _, name, args = calls.get(block.get("tool_use_id", ""), (0, "", {}))
    if name == "read_file":
        later = [
            n
            for (j, n, a) in calls.values()
            if j > index
            and a.get("path") == args.get("path")
            and (n in EDIT_TOOLS or (n == "read_file" and _covers(a, args)))
        ]
        if later:
            return f"superseded read of {args.get('path')} (later {later[0]})"
    if name in SEARCH_TOOLS and len(block["content"]) >= min_chars:
        return f"{name} result of {len(block['content'])} characters, already acted on"
    return ""


def _lines(args: dict[str, Any]) -> tuple[int, float]:
    """The first and last line a read_file call asked for (its defaults: from 1, to the end)."""
    try:
        first = max(int(args.get("offset") or 1), 1)
        limit = int(args.get("limit") or 0)
    except (TypeError, ValueError):
        return 1, float("inf")
    return first, first + limit - 1 if limit > 0 else float("inf")


def _covers(later: dict[str, Any], earlier: dict[str, Any]) -> bool:
    """Whether the later read asked for every line the earlier one did (the next page of a
    file read in pages does not: it is other lines)."""
    (a, b), (c, d) = _lines(later), _lines(earlier)
    return a <= c and b >= d


def _is_status(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and str(block.get("text", "")).startswith("<agent_status")
