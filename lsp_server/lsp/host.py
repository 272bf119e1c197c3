"""The LSP transport behind the shared core: updates as notifications, asks as requests, edits as
``workspace/applyEdit``.

``lsp_server.core`` owns the agent ``Host`` (event mapping, permission timeout, edit modes); this
``Frontend`` only knows JSON-RPC over the pygls connection and the editor's documents. An edit is
checked against what the editor holds right now; if the text moved on since the agent read it,
the edit is reported "stale" rather than applied over the user's typing. ``workspace/applyEdit``
is only sent to clients that advertise it; otherwise (or when the client answers it with an
error) an allowed edit is written to the disk.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter

from agent.errors import ToolError
from agent.events import AgentEvent
from agent.protocols import EditOutcome, EditProposal
from agent.workspace import atomic_write, check_unmoved, disk_text
from lsp_server.core import event_to_update, is_text_chunk
from lsp_server.core.coalesce import TextCoalescer
from lsp_server.core.late_edit import late_edit_note, late_edit_status
from lsp_server.lsp.document_lookup import find_document, open_document
from lsp_server.lsp.edits import workspace_edit

log = logging.getLogger("kiln.lsp.host")

UPDATE = "kiln/session/update"
REQUEST_PERMISSION = "kiln/session/requestPermission"
CANCEL_REQUEST = "$/cancelRequest"


class LspFrontend:
    """``lsp_server.core.Frontend`` over a pygls ``LanguageServer``."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.confirm_edits = False  # ask the editor for needsConfirmation when it supports it
        self._held = TextCoalescer(self._notify)

    # -- capabilities negotiated at initialize ---------------------------------------------

    @property
    def position_encoding(self) -> str:
        caps = getattr(self.server.protocol, "server_capabilities", None)
        encoding = getattr(caps, "position_encoding", None) or "utf-16"
        return str(getattr(encoding, "value", encoding))

    def _workspace_edit_caps(self) -> Any:
        caps = self.server.protocol.client_capabilities
        workspace = getattr(caps, "workspace", None)
        return getattr(workspace, "workspace_edit", None)

    @property
    def apply_edit_supported(self) -> bool:
        """The client advertised ``workspace.applyEdit``; without it edits go to the disk."""
        caps = getattr(self.server.protocol, "client_capabilities", None)
        return bool(getattr(getattr(caps, "workspace", None), "apply_edit", False))

    @property
    def document_changes(self) -> bool:
        return bool(getattr(self._workspace_edit_caps(), "document_changes", False))

    @property
    def create_supported(self) -> bool:
        ops = getattr(self._workspace_edit_caps(), "resource_operations", None) or []
        return any(str(getattr(op, "value", op)) == "create" for op in ops)

    @property
    def annotations_supported(self) -> bool:
        return getattr(self._workspace_edit_caps(), "change_annotation_support", None) is not None

    # -- Frontend ---------------------------------------------------------------------------

    def render(
        self, event: AgentEvent, *, root: Path, context_window: int = 0
    ) -> dict[str, Any] | None:
        return event_to_update(event, root=root, context_window=context_window)

    async def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        """Send an update; streamed text is coalesced for a few milliseconds (a model emits
        a delta every few tokens, an editor re-renders per notification). Any other update,
        a permission request and the end of the turn flush it first, so order is kept."""
        if is_text_chunk(update):
            self._held.hold(session_id, update)
            return
        self.send_now(session_id, update)

    def send_now(self, session_id: str, update: dict[str, Any]) -> None:
        """Send an update at once (after any text still held), without coalescing it."""
        self.flush(session_id)
        self._notify(session_id, update)

    def flush(self, session_id: str) -> None:
        self._held.flush(session_id)

    def _notify(self, session_id: str, update: dict[str, Any]) -> None:
        if getattr(self.server.protocol, "shut_down", False):
            return
        try:
            self.server.protocol.notify(UPDATE, {"sessionId": session_id, "update": update})
        except Exception as exc:  # noqa: BLE001 - a gone client must not end the turn abruptly
            log.info("could not send an update: %s", exc)

    async def ask_permission(
        self, session_id: str, tool_call: dict[str, Any], options: list[dict[str, str]]
    ) -> Any:
        """Ask the editor; when the core gives up (timeout, cancel) the editor is told with
        ``$/cancelRequest`` so it can close its prompt, and a late answer is ignored."""
        self.flush(session_id)
        msg_id = f"kiln-permission-{uuid.uuid4().hex[:12]}"
        # The id is in the params too: clients whose handlers never see the JSON-RPC id
        # (Neovim) match a later $/cancelRequest to the right prompt with it.
        params = {
            "sessionId": session_id,
            "toolCall": tool_call,
            "options": options,
            "_meta": {"requestId": msg_id},
        }
        future = self.server.protocol.send_request_async(REQUEST_PERMISSION, params, msg_id=msg_id)
        try:
            # Shielded: cancelling the wait must not cancel pygls's own future, or the late
            # response would hit a cancelled future inside pygls.
            return plain_json(await asyncio.shield(future))
        except asyncio.CancelledError:
            try:
                self.server.protocol.notify(CANCEL_REQUEST, types.CancelParams(id=msg_id))
            except Exception:  # noqa: BLE001 - the client may be gone
                pass
            raise

    def read_uri(self, uri: str) -> str | None:
        """A document without a file (``untitled:``…), as the editor synced it."""
        doc = open_document(self.server.workspace, uri)
        return None if doc is None else doc.source

    def read_buffer(self, path: Path) -> str | None:
        doc = find_document(self.server.workspace, path)
        return None if doc is None else doc.source

    async def apply_edit(self, session_id: str, proposal: EditProposal) -> EditOutcome:
        """Send the edit as ``workspace/applyEdit``; a client without that capability, or one
        that answers with an error (it never saw the edit, so nobody rejected it), gets the
        file written on disk instead, when the disk holds what the edit was computed on."""
        path = Path(proposal.meta.get("abspath") or proposal.path)
        root = Path(proposal.meta["root"]) if proposal.meta.get("root") else None
        if root is not None:  # a command may have made a folder on the way a link since the check
            check_unmoved(root, path)
        doc = find_document(self.server.workspace, path)
        if doc is not None:
            current: str | None = doc.source
            version = doc.version
            uri = doc.uri
        else:
            current = disk_text(path, root)
            version = None
            uri = path.as_uri()
        if (current or "") != proposal.old_text:
            return "stale"
        if not self.apply_edit_supported:
            return self._write_disk(
                path, proposal, "the editor does not apply workspace edits", root
            )
        annotation = None
        if self.annotations_supported:
            annotation = {
                "label": "Kiln edit",
                "needsConfirmation": self.confirm_edits,
                "description": f"{proposal.path} (proposal {proposal.proposal_id})",
            }
        edit = workspace_edit(
            uri,
            current or "",
            proposal.new_text,
            encoding=self.position_encoding,
            version=version,
            exists=current is not None,
            document_changes=self.document_changes,
            create_supported=self.create_supported,
            annotation=annotation,
        )
        if edit is None:  # the client cannot create files: a new file goes straight to disk
            atomic_write(path, proposal.new_text, root=root)
            return "applied"
        params = get_converter().structure(
            {"label": f"Kiln: edit {proposal.path}", "edit": edit}, types.ApplyWorkspaceEditParams
        )
        try:
            result = plain_json(await self._send_edit(session_id, params, proposal.path))
        except asyncio.CancelledError:
            raise
        except TimeoutError as exc:  # the edit may yet land: nothing is written here
            raise ToolError(
                f"the editor did not answer the edit of {proposal.path} ({exc}); "
                "it is not known to be applied",
                suggestion="read the file again before editing it further",
            ) from None
        except Exception as exc:  # noqa: BLE001 - an error answer is not a user's rejection
            log.info("edit %s: applyEdit failed (%s); writing the file", proposal.proposal_id, exc)
            return self._write_disk(
                path, proposal, f"the editor answered applyEdit with {exc}", root
            )
        if isinstance(result, dict) and result.get("applied"):
            return "applied"
        doc = find_document(self.server.workspace, path)
        if doc is not None and version is not None and doc.version != version:
            return "stale"
        log.info("edit %s not applied: %s", proposal.proposal_id, result)
        return "rejected"

    async def _send_edit(
        self, session_id: str, params: types.ApplyWorkspaceEditParams, path: str
    ) -> Any:
        """``workspace/applyEdit``, answered within the session's ``permissionTimeout`` (the
        editor may ask the user first), else withdrawn with ``$/cancelRequest``: a client that
        never answers held the turn for ever. One that answers ``applied: true`` after all
        is heard: the model gets a note with its next request, the editor a status line."""
        live = self.server.manager.live.get(session_id) if self.server.manager else None
        config = live.host.config if live is not None else self.server.config
        msg_id = f"kiln-edit-{uuid.uuid4().hex[:12]}"
        future = self.server.protocol.send_request_async(
            types.WORKSPACE_APPLY_EDIT, params, msg_id=msg_id
        )
        try:
            return await asyncio.wait_for(asyncio.shield(future), config.permission_timeout)
        except (TimeoutError, asyncio.CancelledError) as exc:
            try:
                self.server.protocol.notify(CANCEL_REQUEST, types.CancelParams(id=msg_id))
            except Exception:  # noqa: BLE001 - the client may be gone
                pass
            future.add_done_callback(lambda done: self._late_answer(session_id, path, done))
            if isinstance(exc, TimeoutError):
                raise TimeoutError(f"no answer within {config.permission_timeout:g} s") from None
            raise

    def _late_answer(self, session_id: str, path: str, answer: Any) -> None:
        """A withdrawn edit answered after all: when it says applied, the model (which was told
        the edit is not known to be applied) hears it landed, in words that depend only on the
        path (the request stays cache-stable), and the editor shows it."""
        if answer.cancelled() or answer.exception() is not None:
            return
        result = plain_json(answer.result())
        live = self.server.manager.live.get(session_id) if self.server.manager else None
        if live is None or not (isinstance(result, dict) and result.get("applied") is True):
            return
        live.session.landed_late(path, late_edit_note(path))
        self.send_now(session_id, {"sessionUpdate": "status", "text": late_edit_status(path)})

    def _write_disk(
        self, path: Path, proposal: EditProposal, why: str, root: Path | None = None
    ) -> EditOutcome:
        """Write an allowed edit ourselves; a file whose disk text differs from what the edit
        was computed on (unsaved editor changes) is not overwritten: the model hears why."""
        if (disk_text(path, root) or "") != proposal.old_text:
            raise ToolError(
                f"{why}, and {proposal.path} has unsaved changes in the editor",
                suggestion="ask the user to save the file, then redo the edit",
            )
        atomic_write(path, proposal.new_text, root=root)
        return "applied"


def plain_json(value: Any) -> Any:
    """Responses may come back as attrs objects or namedtuples; the core wants dicts."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {k: plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple) and not hasattr(value, "_asdict"):
        return [plain_json(v) for v in value]
    if hasattr(value, "_asdict"):
        return {k: plain_json(v) for k, v in value._asdict().items()}
    if hasattr(value, "__attrs_attrs__"):
        from lsprotocol import converters

        return converters.get_converter().unstructure(value)
    return value
