"""The ``kiln/session/*`` and ``kiln/edit/*`` methods: thin JSON-RPC wrappers over the core.

Shapes follow ACP's session model (see ``lsp_server/PROTOCOL.md``). ``kiln/session/cancel`` is a
notification and the pending ``kiln/session/prompt`` then resolves normally with
``stopReason: "cancelled"``; a ``$/cancelRequest`` on the prompt is the hard variant.
"""

from __future__ import annotations

from typing import Any

from lsp_server.core import (
    EDIT_MODES,
    STALE_DOCUMENT,
    CoreError,
    InvalidParams,
    TurnInProgress,
    history_updates,
)
from lsp_server.lsp.rpc import method, require


def _options(params: dict[str, Any]) -> dict[str, Any]:
    keys = ("mode", "editMode", "provider", "model", "maxSteps", "permissionTimeout")
    return {k: params[k] for k in keys if params.get(k) is not None}


def register(server: Any) -> None:
    @method(server, "kiln/session/new")
    async def session_new(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        cwd = params.get("cwd")
        session = await ls.core().new_session(cwd, _options(params))
        live = ls.core().live[session.id]
        return {
            "sessionId": session.id,
            "cwd": str(session.root),
            "mode": session.config.mode,
            "editMode": live.host.config.edit_mode,
        }

    @method(server, "kiln/session/load")
    async def session_load(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        session_id = require(params, "sessionId")
        if params.get("replay", True) and ls.core().is_busy(session_id):
            raise TurnInProgress(
                "the session is running a turn", hint="load it without replay, or after the turn"
            )
        session = await ls.core().load_session(session_id, _options(params))
        replayed = 0
        if params.get("replay", True):
            for update in history_updates(session.messages, root=session.root):
                await ls.frontend.send_update(session.id, update)
                replayed += 1
        return {
            "sessionId": session.id,
            "cwd": str(session.root),
            "mode": session.config.mode,
            "messages": len(session.messages),
            "replayed": replayed,
        }

    @method(server, "kiln/session/list")
    async def session_list(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        return {"sessions": ls.core().list_sessions(params.get("cwd"))}

    @method(server, "kiln/session/prompt")
    async def session_prompt(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        session_id = require(params, "sessionId")
        if "prompt" not in params:
            raise InvalidParams("missing required param 'prompt'")
        before = set(ls.core().get(session_id).files_modified)
        try:
            reason = await ls.core().prompt(session_id, params["prompt"])
        finally:
            ls.frontend.flush(session_id)  # all streamed text arrives before the answer
        session = ls.core().get(session_id)
        return {
            "stopReason": reason,
            "usage": {**session.usage.to_dict(), "costUsd": round(session.cost_usd, 6)},
            "filesModified": [p for p in session.files_modified if p not in before],  # this turn's
        }

    @method(server, "kiln/session/cancel", notification=True)
    async def session_cancel(ls: Any, params: dict[str, Any]) -> None:
        ls.core().cancel(require(params, "sessionId"))

    @method(server, "kiln/session/close")
    async def session_close(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        return {"closed": await ls.core().close_session(require(params, "sessionId"))}

    @method(server, "kiln/session/setMode")
    async def session_set_mode(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        from agent.permissions import MODES

        session = ls.core().get(require(params, "sessionId"))
        host = ls.core().live[session.id].host
        mode, edit_mode = params.get("mode"), params.get("editMode")
        if mode is not None and mode not in MODES:
            raise InvalidParams(f"unknown mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
        if edit_mode is not None and edit_mode not in EDIT_MODES:
            raise InvalidParams(
                f"unknown editMode {edit_mode!r}", hint=f"use one of: {', '.join(EDIT_MODES)}"
            )
        if mode is not None:
            session.config.mode = mode
            session.permissions.mode = mode
            host.config.mode = mode
        if edit_mode is not None:
            host.config.edit_mode = edit_mode
        return {"mode": session.config.mode, "editMode": host.config.edit_mode}

    @method(server, "kiln/edit/list")
    async def edit_list(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        wanted = params.get("sessionId")
        edits = [
            {
                "proposalId": pid,
                "sessionId": sid,
                "toolCallId": p.call_id,
                "path": p.path,
                "oldText": p.old_text,
                "newText": p.new_text,
            }
            for pid, (sid, p) in ls.core().pending_edits.items()
            if wanted in (None, sid)
        ]
        return {"edits": edits}

    @method(server, "kiln/edit/resolve")
    async def edit_resolve(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        proposal_id = require(params, "proposalId")
        decision = require(params, "decision")
        outcome = await ls.core().resolve_edit(proposal_id, decision)
        if outcome == "stale":
            raise CoreError(
                f"the document changed since proposal {proposal_id} was made",
                code=STALE_DOCUMENT,
                hint="ask the agent to redo the edit on the current text",
            )
        return {"proposalId": proposal_id, "outcome": outcome}
