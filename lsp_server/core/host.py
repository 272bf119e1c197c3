"""The agent ``Host`` each live session gets: it maps events to updates, answers edit
permissions by edit mode, keeps deferred proposals, and turns an unanswered permission request
into a denial after a timeout.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.errors import NoAnswer
from agent.events import AgentEvent
from agent.protocols import Decision, EditOutcome, EditProposal, PermissionRequest
from lsp_server.core import partial
from lsp_server.core.config import CoreConfig
from lsp_server.core.updates import (
    PERMISSION_OPTIONS,
    answer_readable,
    answer_withdrawn,
    closed_tool_call,
    decision_from_answer,
    permission_tool_call,
    unoffered_option,
)

if TYPE_CHECKING:
    from lsp_server.core.manager import SessionManager

log = logging.getLogger("kiln.core")


class CoreHost:
    """The agent ``Host`` for one session: maps events, times out asks, applies edit modes."""

    def __init__(self, manager: SessionManager, config: CoreConfig) -> None:
        self.manager = manager
        self.config = config
        self.session_id = ""
        self.root = manager.root or Path.cwd()
        self.context_window = 0
        self.open_calls: dict[str, None] = {}  # tool calls announced and not finished, in order
        self.kept: dict[str, str] = {}  # proposal id -> the text the user kept (per-hunk review)
        self.unattended_reason = ""  # an editor user is there to ask

    async def emit(self, event: AgentEvent) -> None:
        if event.parent_tool_call_id:  # a sub-agent's step: the editor shows the task's result
            return
        update = self.manager.frontend.render(
            event, root=self.root, context_window=self.context_window
        )
        if update is not None:
            await self.send(update, event.session_id or self.session_id)

    async def send(self, update: dict[str, Any], session_id: str = "") -> None:
        kind, call_id = update.get("sessionUpdate"), str(update.get("toolCallId", ""))
        if kind == "tool_call":
            self.open_calls[call_id] = None
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            self.open_calls.pop(call_id, None)
        await self.manager.frontend.send_update(session_id or self.session_id, update)

    async def close_open_calls(self, reason: str) -> None:
        """A turn that ended while tools ran (cancel, limits) closes their calls on the wire."""
        for call_id in list(self.open_calls):
            await self.send(closed_tool_call(call_id, reason))

    async def request_permission(self, request: PermissionRequest) -> Decision:
        if request.edit is not None and self.config.edit_mode in ("auto", "deferred"):
            return "allow_once"
        tool_call = permission_tool_call(request, root=self.root)
        try:
            answer = await asyncio.wait_for(
                self.manager.frontend.ask_permission(
                    self.session_id, tool_call, PERMISSION_OPTIONS
                ),
                timeout=self.config.permission_timeout,
            )
        except TimeoutError:
            log.info("permission request %s timed out; refusing", request.call_id)
            seconds = f"{self.config.permission_timeout:g}"
            raise NoAnswer(
                f"no answer within {seconds} s (the permission request timed out)"
            ) from None
        except Exception as exc:  # noqa: BLE001 - an error answer or a gone client is no "yes"
            log.info("permission request %s failed (%s); refusing", request.call_id, exc)
            raise NoAnswer(f"the permission request failed: {exc}") from None
        if self.manager.is_cancelling(self.session_id):
            # An answer that came in as the turn was cancelled (a click on Allow as Stop was
            # pressed) must not apply: the turn stops here instead of running the tool.
            log.info("permission answer for %s came after cancel; ignored", request.call_id)
            raise asyncio.CancelledError
        if answer_withdrawn(answer):  # refused, but not by the user
            raise NoAnswer("the permission request was cancelled before an answer")
        if not answer_readable(answer):
            raise NoAnswer(
                "the permission request failed: the client's answer is not a permission response"
            )
        if (chosen := unoffered_option(answer)) is not None:
            raise NoAnswer(
                f"the permission request failed: the client chose {chosen!r}, "
                "which is not one of the options offered"
            )
        decision = decision_from_answer(answer)
        kept = partial.kept_text(answer, request.edit) if decision.startswith("allow") else None
        if kept is not None and request.edit is not None:
            self.kept[request.edit.proposal_id] = kept
        return decision

    def read_buffer(self, path: Path) -> str | None:
        return self.manager.frontend.read_buffer(path)

    async def apply_edit(self, proposal: EditProposal) -> EditOutcome:
        if self.config.edit_mode == "deferred":
            self.manager.pending_edits[proposal.proposal_id] = (self.session_id, proposal)
            return "deferred"
        kept = self.kept.pop(proposal.proposal_id, None)
        if kept is None:
            return await self.manager.frontend.apply_edit(self.session_id, proposal)
        outcome = await self.manager.frontend.apply_edit(
            self.session_id, partial.with_kept_text(proposal, kept)
        )
        live = self.manager.live.get(self.session_id)
        if outcome == "applied" and live is not None:
            live.session.context.add(partial.note_for_model(proposal.path))
        return outcome
