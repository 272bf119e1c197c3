"""What an edit the editor applied after Kiln had stopped waiting for it (a timeout, a cancelled
turn) tells the model and the user, in `kiln lsp` (a late ``workspace/applyEdit`` answer) and
`kiln acp` (a late ``fs/write_text_file`` answer). The note depends only on the path, so the
request that carries it stays cache-stable (``agent.session.Session.landed_late`` stores it)."""

from __future__ import annotations


def late_edit_note(path: str) -> str:
    return (
        f"<edit_review>The editor applied your edit to {path} after all: it answered after Kiln "
        "had stopped waiting, so the edit you were told is not known to be applied did land. "
        "Read the file before editing it again.</edit_review>"
    )


def late_edit_status(path: str) -> str:
    return f"the editor applied the edit of {path} after Kiln had stopped waiting for it"
