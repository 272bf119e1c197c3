"""Per-hunk review: the user accepts an edit with only some of its hunks.

An editor answers an edit's permission request with ``_meta.newText`` (the file as the user
kept it: some hunks taken, others left out). That text is applied instead of the proposal's,
and the model is told, at the head of its next request, that the file differs from what it
wrote, so it reads the file again rather than assume its whole edit landed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agent.protocols import EditProposal


def kept_text(answer: Any, proposal: EditProposal | None) -> str | None:
    """The user's partial text from an allow answer, or None for a whole accept or a reject."""
    if proposal is None or not isinstance(answer, dict):
        return None
    meta = answer.get("_meta")
    text = meta.get("newText") if isinstance(meta, dict) else None
    if not isinstance(text, str) or text == proposal.new_text:
        return None
    return text


def with_kept_text(proposal: EditProposal, text: str) -> EditProposal:
    return replace(proposal, new_text=text)


def note_for_model(path: str) -> str:
    return (
        f"<edit_review>The user accepted only some hunks of your edit to {path}; the rest was "
        "left out. Read the file before editing it again.</edit_review>"
    )
