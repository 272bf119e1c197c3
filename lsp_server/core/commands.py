"""What the built-in slash commands do to a live session, for every front-end.

`kiln lsp` serves them as requests (``kiln/session/compact``, ``kiln/context/show``,
``kiln/models/list``) that the editor's chat turns into ``/compact``, ``/context`` and
``/model``; `kiln acp` runs the same typed commands in place of a turn (``lsp_server.acp``).
Each reads or changes only the session it names; the caller makes sure no turn runs in it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent.compaction_store import CompactionRecord
from agent.env_secrets import env_secrets, redact_all
from agent.overflow import model_id
from agent.session_claim import turn_claim
from lsp_server.core.manager import SessionManager


async def compact(core: SessionManager, session_id: str) -> CompactionRecord | None:
    """Compact the session now; None when there is nothing to compact. The session is held as
    for a turn, so another Kiln process cannot run one in it meanwhile."""
    session = core.get(session_id)
    with turn_claim(session.store, session.transcript):
        return await session.compactor.compact(session, reason="manual")


async def context_report(core: SessionManager, session_id: str) -> dict[str, Any]:
    """How the session's context is spent: counts, usage, and the last request's budget. The
    todo list and the refusals are redacted (``agent.env_secrets``), as ``SessionManager.history``
    replays them: the model may have copied a key from the task into a todo."""
    from agent import context_report as cr

    session = core.get(session_id)
    live = core.live[session.id]

    def build() -> dict[str, Any]:
        store = session.store
        if not store.requests(session.id):
            return {}
        view = cr.request_at(store, session.id, cr.select_step(store, session.id))
        budget = cr.budget(view, live.host.context_window or cr.DEFAULT_WINDOW)
        budget.cache = cr.cache_share(store, session.id)
        return {"budget": budget.to_dict(), "step": view.step, "turn": view.turn}

    report = await asyncio.to_thread(build)
    secrets = env_secrets()  # the plan and refusals redacted as a load's replay shows them
    return {
        "sessionId": session.id,
        "cwd": str(session.root),
        "busy": core.is_busy(session.id),
        "messages": len(session.transcript.messages),
        "turns": session.turn.number,
        "steps": session.turn.step_count,
        "usage": {**session.turn.usage.to_dict(), "costUsd": round(session.turn.cost_usd, 6)},
        "contextWindow": live.host.context_window,
        "filesModified": list(session.turn.files_modified),
        "todos": redact_all(session.state.get("todos", []), secrets),
        "refusals": redact_all(session.turn.refusals, secrets),
        "tools": list(session.runner.tools),
        "deferredTools": list(session.runner.deferred),
        **report,
    }


async def models(core: SessionManager, session_id: str) -> dict[str, Any]:
    """The models the session's provider offers, its own first (``agent.providers.catalog``)."""
    from agent.providers import catalog

    model = core.get(session_id).model
    return await catalog.list_models({"provider": model.name, "model": model_id(model)})


async def switch_model(core: SessionManager, session_id: str, name: str) -> str:
    """Use model ``name`` of the session's provider from its next request on (stored, so a load
    goes on with it); returns the id of the model it replaced."""
    from agent.providers import select_model

    session = core.get(session_id)
    model = await asyncio.to_thread(select_model, {"provider": session.model.name, "model": name})
    replaced = session.set_model(model)
    core.live[session_id].host.context_window = int(getattr(model, "context_window", 0) or 0)
    close = getattr(replaced, "aclose", None)  # optional on Model: SDK-backed ones have it
    if close is not None:
        await close()
    return model_id(replaced)
