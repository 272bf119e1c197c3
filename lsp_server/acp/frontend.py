"""The ACP transport under the shared core: where updates go, how the user is asked, files.

``lsp_server.core`` turns agent events into ACP-shaped update dicts and owns sessions; this
module renders agent events for ACP (``render_event``) and moves them over the wire. Events ACP
does not define (status, refusal, error…) are folded into ``agent_thought_chunk``/``agent_message_chunk`` text so standard clients show
them. Streamed text is coalesced (20 ms) like `kiln lsp` does. When the client advertises ``fs.readTextFile``/``fs.writeTextFile``, reads and edits go
through the client, so the agent sees and changes what the editor holds, unsaved text included;
otherwise the disk is used.

``Host.read_buffer`` is synchronous while ACP is not, so the client's text of a file is fetched
when a tool call naming that file *starts* (the ``tool_call`` update precedes the tool's run)
and served from that snapshot until the call completes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, assert_never

from acp import RequestError
from acp.schema import PermissionOption, SessionNotification, ToolCallUpdate
from pydantic import ValidationError

from agent import line_ends
from agent.errors import ToolError
from agent.events import (
    AgentEvent,
    Compacted,
    EditProposed,
    ErrorReported,
    MemoryProposed,
    PermissionAsked,
    PlanUpdated,
    Refused,
    StatusNote,
    TextChunk,
    ThoughtChunk,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnDone,
    UsageReported,
)
from agent.hosts import DiskHost
from agent.protocols import EditOutcome, EditProposal
from agent.workspace import check_unmoved, disk_text
from lsp_server.acp.client_paths import ClientPaths
from lsp_server.acp.outgoing import OutgoingRequests
from lsp_server.core.coalesce import TextCoalescer
from lsp_server.core.prompts import resolved
from lsp_server.core.updates import acp_stop_reason, event_to_update, is_text_chunk

log = logging.getLogger("kiln.acp")

FS_TIMEOUT = 30.0


class PermissionRequestFailed(Exception):
    """The client answered ``session/request_permission`` with an error or a malformed result."""


def render_event(
    event: AgentEvent, *, root: Path, context_window: int = 0
) -> dict[str, Any] | None:
    """The ACP v1 update for an agent event; Kiln-only kinds become visible text or nothing."""
    update = event_to_update(event, root=root, context_window=context_window)
    match event:
        case (
            TextChunk()
            | ThoughtChunk()
            | ToolCallStarted()
            | ToolCallRunning()
            | ToolCallFinished()
            | EditProposed()
            | PlanUpdated()
            | UsageReported()
        ):
            return update  # kinds ACP v1 defines
        case ErrorReported(message=message, hint=hint):
            hint = f" ({hint})" if hint else ""
            return _chunk("agent_message_chunk", f"\n\nError: {message}{hint}\n")
        case StatusNote(text=text):
            pass
        case Refused(tool=tool, reason=reason):
            text = f"Not allowed: {tool}: {reason or 'denied'}"
        case MemoryProposed(text=proposal):
            text = f"Proposed memory: {proposal}"
        case Compacted():
            text = "Compacted the conversation to fit the context window."
        case PermissionAsked() | TurnDone():
            return None  # the permission request and the prompt response carry these
        case _:
            assert_never(event)
    if not text:
        return None
    return _chunk("agent_thought_chunk", text + "\n", meta={"kiln": update})


def replayed(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A stored session's updates (``SessionManager.history``) as its live turns showed them: a
    ``status`` there is the note a limit ended a turn with (the only one a session stores), shown
    as the thinking line and the closing ``Stopped: …`` text that turn sent."""
    shown: list[dict[str, Any]] = []
    for update in updates:
        if update.get("sessionUpdate") == "status":
            note = str(update.get("text", ""))
            shown += [_chunk("agent_thought_chunk", note + "\n", {"kiln": update}), _stopped(note)]
        else:
            shown.append(update)
    return shown


def _stopped(note: str) -> dict[str, Any]:
    """The last text of a turn a limit ended: why, as `kiln run` prints it."""
    return _chunk("agent_message_chunk", f"\n\nStopped: {_sentence(note)}\n")


def _sentence(note: str) -> str:
    """``stopped: x failed…`` -> ``x failed….``: the note as the end of "Stopped: …"."""
    note = note.removeprefix("stopped: ").strip()
    return note if note.endswith((".", "!", "?")) else note + "."


def message_chunk(text: str) -> dict[str, Any]:
    """An ``agent_message_chunk`` of ``text``: what the client shows as the agent's words."""
    return _chunk("agent_message_chunk", text)


def thought_chunk(text: str) -> dict[str, Any]:
    """An ``agent_thought_chunk`` line: how a client shows Kiln's status notes."""
    return _chunk("agent_thought_chunk", text + "\n")


def _chunk(kind: str, text: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if meta:
        update["_meta"] = meta
    return update


def _folder_or_no_name(path: Path) -> bool:
    """A folder, or a name no file can have (too long): nothing to ask the client for."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return True


class AcpFrontend:
    """``lsp_server.core.Frontend`` over one ACP connection (``acp.AgentSideConnection``)."""

    def __init__(self, client: Any, outgoing: OutgoingRequests | None = None) -> None:
        self.client = client
        # withdraws requests it stops waiting for (once ``serve_stdio`` connects it)
        self.outgoing = outgoing or OutgoingRequests()
        self.can_read = False
        self.can_write = False
        self._disk = DiskHost()
        self.roots: dict[str, Path] = {}  # session id -> workspace root, for the prefetch check
        self.paths = ClientPaths()  # paths under the cwd the client sent, not its resolution
        self.rejected_always: set[tuple[str, str]] = set()  # (session id, tool name)
        # resolved path -> (client text, (session id, call id) of the running calls naming it)
        self._buffers: dict[Path, tuple[str, set[tuple[str, str]]]] = {}
        self._held = TextCoalescer(self._queue)
        self._tail: dict[str, asyncio.Future[None]] = {}  # the session's last queued send
        self._last_note: dict[str, str] = {}  # session id -> its turn's last status note
        # (session id, workspace path) of an edit the client wrote after Kiln stopped waiting
        self.landed_late: Callable[[str, str], None] | None = None

    def set_capabilities(self, capabilities: Any) -> None:
        fs = getattr(capabilities, "fs", None)
        self.can_read = bool(getattr(fs, "read_text_file", False))
        self.can_write = bool(getattr(fs, "write_text_file", False))

    # -- updates ------------------------------------------------------------------------------

    def render(
        self, event: AgentEvent, *, root: Path, context_window: int = 0
    ) -> dict[str, Any] | None:
        """As ``render_event``; a turn that a limit ended also says why in its visible text,
        as `kiln run` prints it: the note is otherwise only a thought, which clients fold."""
        match event:
            case StatusNote(text=text):
                self._last_note[event.session_id] = text
            case TurnDone(stop_reason=reason):
                note = self._last_note.pop(event.session_id, "")
                if note and acp_stop_reason(reason) == "max_turn_requests":
                    return _stopped(note)
        return render_event(event, root=root, context_window=context_window)

    async def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        """Send an update in order; streamed text is coalesced for a few milliseconds, as in
        `kiln lsp` (a model emits a delta every few tokens), and flushed before anything else."""
        kind = update.get("sessionUpdate")
        if is_text_chunk(update):
            self._held.hold(session_id, update)
            return
        if kind == "tool_call":
            await self._prefetch(session_id, update)
        await self.send_now(session_id, update)  # already ACP-shaped (``render``)
        if kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            self.release(session_id, str(update.get("toolCallId", "")))

    async def send_now(self, session_id: str, update: dict[str, Any]) -> None:
        """Send an ACP update after everything queued before it (held text included)."""
        self._held.flush(session_id)
        await self._queue(session_id, update)

    def send_later(self, session_id: str, update: dict[str, Any]) -> None:
        """Queue an update without waiting: sent from a request handler, it follows the handler's
        answer (the SDK queues that answer as the handler returns, before a queued send runs),
        as an update about a new session must follow the ``session/new`` answer naming it."""
        self._held.flush(session_id)
        self._queue(session_id, update)

    async def flush(self, session_id: str) -> None:
        """Send held text and wait until every queued update of the session is written."""
        self._held.flush(session_id)
        tail = self._tail.get(session_id)
        if tail is not None:  # (a send cut short must not cut short the prompt's answer)
            await asyncio.wait([tail])

    def _queue(self, session_id: str, update: dict[str, Any]) -> asyncio.Future[None]:
        """Chain the send after the session's previous one, so order is the call order."""
        previous = self._tail.get(session_id)

        async def send() -> None:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            await self.notify(session_id, update)

        future = asyncio.ensure_future(send())
        self._tail[session_id] = future
        # A cancelled turn stops awaiting its update, but the update is still sent (in order).
        return asyncio.shield(future)

    async def notify(self, session_id: str, update: dict[str, Any]) -> None:
        """Validate an ACP update dict and send it as a ``session/update`` notification."""
        kind = update.get("sessionUpdate")
        try:
            shown = self.paths.update(session_id, update)
            note = SessionNotification.model_validate({"sessionId": session_id, "update": shown})
        except ValidationError as exc:  # a mapping bug must not end the user's turn
            log.warning("dropped a malformed %s update: %s", kind, exc.errors()[:1])
            return
        try:
            await self.client.session_update(session_id=session_id, update=note.update)
        except (ConnectionError, RuntimeError):
            log.info("client gone; dropped a %s update", kind)

    # -- permissions --------------------------------------------------------------------------

    async def ask_permission(
        self, session_id: str, tool_call: dict[str, Any], options: list[dict[str, str]]
    ) -> Any:
        """Ask the client; the core applies the timeout and turns any failure (an error answer,
        a malformed one, a gone client) into a denial that says the request failed.

        "Always reject" is honoured here for the rest of the session (the harness remembers
        "always allow" itself), so the user is not asked again about a tool they refused.
        """
        await self.flush(session_id)
        tool = str((tool_call.get("_meta") or {}).get("tool") or tool_call.get("title", ""))
        if (session_id, tool) in self.rejected_always:
            return {"outcome": {"outcome": "selected", "optionId": "reject_always"}}
        try:
            call = ToolCallUpdate.model_validate(self.paths.update(session_id, tool_call))
            choices = [PermissionOption.model_validate(o) for o in options]
        except ValidationError as exc:  # a mapping bug: refuse, and say it was not the user
            log.warning("malformed permission request (%s): denied", exc.errors()[:1])
            raise PermissionRequestFailed("the question could not be put to the client") from None
        try:
            async with self.outgoing.withdrawn_if_abandoned():
                response = await self.client.request_permission(
                    session_id=session_id, tool_call=call, options=choices
                )
        except RequestError as exc:  # not a "no" from the user: the core says it failed
            raise PermissionRequestFailed(f"the client answered error {exc.code}: {exc}") from None
        except ValidationError as exc:
            problem: Mapping[str, Any] = next(iter(exc.errors()), {})
            where = ".".join(str(part) for part in problem.get("loc", ())) or "result"
            raise PermissionRequestFailed(
                f"the client's answer is not a permission response ({where}: "
                f"{problem.get('msg', 'invalid')})"
            ) from None
        answer = response.model_dump(by_alias=True, exclude_none=True)
        if answer.get("outcome", {}).get("optionId") == "reject_always":
            self.rejected_always.add((session_id, tool))
        return answer

    # -- files --------------------------------------------------------------------------------

    def read_buffer(self, path: Path) -> str | None:
        entry = self._buffers.get(resolved(Path(path)) or Path(path))  # a link loop: none held
        return entry[0] if entry else None

    async def apply_edit(self, session_id: str, proposal: EditProposal) -> EditOutcome:
        if not self.can_write:
            return await self._disk.apply_edit(proposal)  # type: ignore[return-value]
        path = Path(proposal.meta["abspath"])
        root = Path(proposal.meta["root"]) if proposal.meta.get("root") else None
        if root is not None:  # the client writes where the path leads by then
            check_unmoved(root, path)
        path = path.resolve()
        current = await self.client_text(session_id, path) if self.can_read else None
        if current is None:
            current = disk_text(path, root)
        if (current or "") != proposal.old_text:
            return "stale"
        content = proposal.new_text
        if current is not None and "\r\n" not in current:
            # Clients hand out a Windows file's text with \n (as editors hold it); one that
            # writes what it is sent must not turn the file's \r\n into \n.
            content = line_ends.like(disk_text(path, root) or "", content)
        late = partial(self._written_late, session_id, proposal.path)
        try:
            async with self.outgoing.withdrawn_if_abandoned(late):
                await asyncio.wait_for(
                    self.client.write_text_file(
                        session_id=session_id,
                        path=self.paths.path(session_id, str(path)),
                        content=content,
                    ),
                    timeout=FS_TIMEOUT,
                )
        except TimeoutError:  # the client may yet write it (``_written_late``)
            raise ToolError(
                f"the editor did not answer the write of {proposal.path} within "
                f"{FS_TIMEOUT:g} s; it is not known to be written",
                suggestion="read the file again before editing it further",
            ) from None
        except (RequestError, ConnectionError, ValidationError) as exc:
            raise ToolError(
                f"the editor could not write {proposal.path}: {exc}",
                suggestion="check that the file is writable in the editor, then retry once",
            ) from None
        if path in self._buffers:  # later reads in the same call see the new text
            self._buffers[path] = (proposal.new_text, self._buffers[path][1])
        return "applied"

    def _written_late(self, session_id: str, path: str, result: Any) -> None:
        """The client answered a write Kiln had stopped waiting for (a timeout, a cancelled
        turn): unless the answer is malformed, the file was written, and ``landed_late`` tells
        the session."""
        if result is not None and not isinstance(result, dict):
            log.info("a late answer to the write of %s is no write response: ignored", path)
            return
        log.info("the client wrote %s after Kiln had stopped waiting for it", path)
        if self.landed_late is not None:
            self.landed_late(session_id, path)

    async def client_text(self, session_id: str, path: Path) -> str | None:
        """The client's text of a file, or None when it has none (missing file, error)."""
        if not self.can_read or _folder_or_no_name(path):
            return None
        try:
            async with self.outgoing.withdrawn_if_abandoned():
                response = await asyncio.wait_for(
                    self.client.read_text_file(
                        session_id=session_id, path=self.paths.path(session_id, str(path))
                    ),
                    timeout=FS_TIMEOUT,
                )
        except (RequestError, ConnectionError, TimeoutError, ValidationError) as exc:
            reason = "a malformed answer" if isinstance(exc, ValidationError) else exc
            log.info("fs/read_text_file %s failed (%s); using the disk", path, reason)
            return None
        return str(response.content)

    async def _prefetch(self, session_id: str, update: dict[str, Any]) -> None:
        """Snapshot the client's text of the files a starting tool call names (always fresh:
        the user may have typed since an earlier call read the file)."""
        owner = (session_id, str(update.get("toolCallId", "")))
        root = self.roots.get(session_id)
        for location in update.get("locations") or []:
            path = resolved(Path(location["path"]))
            if root is None or path is None or (path != root and root not in path.parents):
                continue  # the tool refuses such paths; never ask the client for them
            text = await self.client_text(session_id, path)
            if text is not None:
                owners = self._buffers[path][1] if path in self._buffers else set()
                self._buffers[path] = (text, owners | {owner})

    def release(self, session_id: str, call_id: str | None = None) -> None:
        """Drop snapshots held for a finished call, or (``call_id=None``) for a whole turn:
        a cancelled tool never sends its final update, and its snapshot must not outlive it."""
        for path, (_, owners) in list(self._buffers.items()):
            owners -= {o for o in owners if o[0] == session_id and call_id in (None, o[1])}
            if not owners:
                del self._buffers[path]
