"""The ``kiln/session/*`` and ``kiln/edit/*`` methods: thin JSON-RPC wrappers over the core.

Shapes follow ACP's session model (see ``lsp_server/PROTOCOL.md``). ``kiln/session/cancel`` is a
notification and the pending ``kiln/session/prompt`` then resolves normally with
``stopReason: "cancelled"``; a ``$/cancelRequest`` on the prompt is the hard variant.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agent.events import UsageReported
from lsp_server.core import EDIT_MODES, STALE_DOCUMENT, CoreError, InvalidParams, TurnInProgress
from lsp_server.core.session_pages import PAGE_SIZE, after, cursor_for
from lsp_server.core.updates import event_to_update
from lsp_server.lsp.methods import kiln_method
from lsp_server.lsp.params import (
    EditListParams,
    EditResolveParams,
    SessionListParams,
    SessionLoadParams,
    SessionNewParams,
    SessionPromptParams,
    SessionRef,
    SetModeParams,
)

if TYPE_CHECKING:
    from lsp_server.lsp.server import KilnServer


@kiln_method("kiln/session/new")
async def session_new(ls: KilnServer, params: SessionNewParams) -> dict[str, Any]:
    session = await ls.core().new_session(params.cwd, params.options())
    live = ls.core().live[session.id]
    return {
        "sessionId": session.id,
        "cwd": str(session.root),
        "mode": session.mode,
        "editMode": live.host.config.edit_mode,
    }


@kiln_method("kiln/session/load")
async def session_load(ls: KilnServer, params: SessionLoadParams) -> dict[str, Any]:
    """Resume a session; with ``replay`` its history is streamed first, every update (the
    last text chunk included) arriving before this answer."""
    core = ls.core()
    if params.replay and core.is_busy(params.session_id):
        raise TurnInProgress(
            "the session is running a turn", hint="load it without replay, or after the turn"
        )
    session = await core.load_session(params.session_id, params.options())
    updates = core.history(session.id) if params.replay else []
    spent = stored_usage(session, core.live[session.id].host.context_window) if updates else None
    if spent:
        updates.append(spent)  # the usage line shows what the session spent so far
    for update in updates:
        ls.frontend.send_now(session.id, update)
    return {
        "sessionId": session.id,
        "cwd": str(session.root),
        "mode": session.mode,
        "editMode": core.live[session.id].host.config.edit_mode,
        "messages": len(session.transcript.messages),
        "replayed": len(updates),
    }


def stored_usage(session: Any, context_window: int) -> dict[str, Any] | None:
    """A replay's last update: what the session spent, summed over every step it stored
    (earlier processes included), ``_meta.totals`` set; ``used`` is the last step's context."""
    rows = session.store.usage(session.id)
    if not rows:
        return None
    keys = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    input_tokens, cache_read, cache_write, output = (sum(int(r[k]) for r in rows) for k in keys)
    event = UsageReported(
        input_tokens=input_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        output_tokens=output,
        cost_usd=round(sum(float(r["cost_usd"]) for r in rows), 6),
        step=int(rows[-1]["step"]),
    )
    update = event_to_update(event, root=session.root, context_window=context_window)
    assert update is not None
    update["used"] = sum(int(rows[-1][k]) for k in keys)
    update["_meta"]["totals"] = True
    return update


@kiln_method("kiln/session/list")
async def session_list(ls: KilnServer, params: SessionListParams) -> dict[str, Any]:
    """A page of stored sessions, newest first; ``nextCursor`` while more follow (as ACP's)."""
    rows, last = ls.core().session_page(params.cwd, after(params.cursor), PAGE_SIZE)
    following = cursor_for(last)
    return {"sessions": rows, **({"nextCursor": following} if following else {})}


@kiln_method("kiln/session/prompt")
async def session_prompt(ls: KilnServer, params: SessionPromptParams) -> dict[str, Any]:
    core = ls.core()
    turn = core.get(params.session_id).turn  # the session's running totals: this turn's part
    before = set(turn.files_modified)
    used, spent = turn.usage.to_dict(), turn.cost_usd
    try:
        reason = await core.prompt(params.session_id, params.prompt)
    finally:
        ls.frontend.flush(params.session_id)  # all streamed text arrives before the answer
    usage = {key: count - used[key] for key, count in turn.usage.to_dict().items()}
    return {
        "stopReason": reason,
        "usage": {**usage, "costUsd": round(turn.cost_usd - spent, 6)},
        "filesModified": [p for p in turn.files_modified if p not in before],
    }


@kiln_method("kiln/session/cancel", notification=True)
async def session_cancel(ls: KilnServer, params: SessionRef) -> None:
    ls.core().cancel(params.session_id)


@kiln_method("kiln/session/close")
async def session_close(ls: KilnServer, params: SessionRef) -> dict[str, Any]:
    return {"closed": await ls.core().close_session(params.session_id)}


@kiln_method("kiln/session/setMode")
async def session_set_mode(ls: KilnServer, params: SetModeParams) -> dict[str, Any]:
    from agent.permissions import MODES

    session = ls.core().get(params.session_id)
    host = ls.core().live[session.id].host
    mode, edit_mode = params.permission(), params.edit_mode
    if mode is not None and mode not in MODES:
        raise InvalidParams(f"unknown mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
    if edit_mode is not None and edit_mode not in EDIT_MODES:
        raise InvalidParams(
            f"unknown editMode {edit_mode!r}", hint=f"use one of: {', '.join(EDIT_MODES)}"
        )
    if mode is not None:
        session.set_mode(mode)  # the one owner: applied and persisted
    if edit_mode is not None:
        host.config.edit_mode = edit_mode
    return {"mode": session.mode, "editMode": host.config.edit_mode}


@kiln_method("kiln/edit/list")
async def edit_list(ls: KilnServer, params: EditListParams) -> dict[str, Any]:
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
        if params.session_id in (None, sid)
    ]
    return {"edits": edits}


@kiln_method("kiln/edit/resolve")
async def edit_resolve(ls: KilnServer, params: EditResolveParams) -> dict[str, Any]:
    outcome = await ls.core().resolve_edit(
        params.proposal_id, params.decision, new_text=params.new_text
    )
    if outcome == "stale":
        raise CoreError(
            f"the document changed since proposal {params.proposal_id} was made",
            code=STALE_DOCUMENT,
            hint="ask the agent to redo the edit on the current text",
        )
    return {"proposalId": params.proposal_id, "outcome": outcome}


HANDLERS: list[Callable[..., Awaitable[Any]]] = [
    session_new, session_load, session_list, session_prompt, session_cancel, session_close,
    session_set_mode, edit_list, edit_resolve,
]  # fmt: skip
