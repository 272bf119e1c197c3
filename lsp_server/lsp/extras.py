"""``kiln/hello``, ``kiln/index/status``, ``kiln/context/show`` and ``kiln/skills/*``.

Each one is a read of state that lives elsewhere (the index, the session store, the skills
libraries), done in a worker thread; a library that is missing in this build answers with the
"not available" error rather than failing the whole server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsp_server.core import EDIT_MODES, CoreError, NotAvailable
from lsp_server.lsp.rpc import method, require
from lsp_server.version import __version__

PROTOCOL_VERSION = 1
METHODS = [
    "kiln/hello", "kiln/session/new", "kiln/session/load", "kiln/session/list",
    "kiln/session/prompt", "kiln/session/cancel", "kiln/session/close", "kiln/session/setMode", "kiln/edit/list",
    "kiln/edit/resolve", "kiln/skills/list", "kiln/skills/search", "kiln/skills/install",
    "kiln/skills/remove", "kiln/index/status", "kiln/context/show", "kiln/complete/mentions",
    "kiln/complete/commands", "kiln/skills/use", "kiln/session/compact",
]  # fmt: skip


def _skills_api() -> Any:
    try:
        from skills_registry import client, discovery, install
    except ImportError as exc:
        raise NotAvailable(f"skills are not available in this build: {exc}") from None
    return client, discovery, install


def register(server: Any) -> None:
    @method(server, "kiln/hello")
    async def hello(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        from agent.permissions import MODES

        return {
            "protocolVersion": PROTOCOL_VERSION,
            "serverVersion": __version__,
            "root": str(ls.root) if ls.root else None,
            "capabilities": {
                "methods": METHODS,
                "modes": list(MODES),
                "editModes": list(EDIT_MODES),
                "promptContent": ["text", "resource_link", "resource"],
                "positionEncoding": ls.frontend.position_encoding,
                "changeAnnotations": ls.frontend.annotations_supported,
                "loadSession": True,
                "hardCancel": True,
            },
            "config": {
                "mode": ls.config.mode,
                "editMode": ls.config.edit_mode,
                "provider": ls.config.provider,
                "model": ls.config.model,
                "permissionTimeout": ls.config.permission_timeout,
            },
            **({"configError": ls.config_error} if ls.config_error else {}),
        }

    @method(server, "kiln/index/status")
    async def index_status(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        if ls.index_sync is None:
            raise NotAvailable("the server is not initialized")
        return dict(await ls.index_sync.status())

    @method(server, "kiln/context/show")
    async def context_show(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        session = ls.core().get(require(params, "sessionId"))
        live = ls.core().live[session.id]
        report: dict[str, Any] = {}
        try:
            from agent import context_report as cr

            def build() -> dict[str, Any]:
                store = session.store
                if not store.requests(session.id):
                    return {}
                view = cr.request_at(store, session.id, cr.select_step(store, session.id))
                budget = cr.budget(view, live.host.context_window or cr.DEFAULT_WINDOW)
                budget.cache = cr.cache_share(store, session.id)
                return {"budget": budget.to_dict(), "step": view.step, "turn": view.turn}

            report = await asyncio.to_thread(build)
        except ImportError:
            report = {}
        return {
            "sessionId": session.id,
            "cwd": str(session.root),
            "busy": ls.core().is_busy(session.id),
            "messages": len(session.messages),
            "turns": session.turn,
            "steps": session.step_count,
            "usage": {**session.usage.to_dict(), "costUsd": round(session.cost_usd, 6)},
            "contextWindow": live.host.context_window,
            "filesModified": list(session.files_modified),
            "todos": session.state.get("todos", []),
            "refusals": session.refusals,
            "tools": list(session.tools),
            "deferredTools": list(session.deferred),
            **report,
        }

    @method(server, "kiln/skills/list")
    async def skills_list(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        _, discovery, _ = _skills_api()
        catalog = await asyncio.to_thread(discovery.discover_skills, ls.root or Path.cwd())
        return {
            "skills": [
                {
                    "name": s.name,
                    "description": s.description,
                    "path": str(s.path),
                    "scope": s.scope,
                    "thirdParty": s.third_party,
                    "allowedTools": s.allowed_tools,
                }
                for s in sorted(catalog.skills.values(), key=lambda s: s.name)
            ],
            "warnings": catalog.warnings,
        }

    @method(server, "kiln/skills/search")
    async def skills_search(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        client, _, _ = _skills_api()
        query = params.get("query", "")
        limit = int(params.get("limit", 20))

        def search() -> dict[str, Any]:
            with client.RegistryClient(client.default_registry(params.get("registry"))) as rc:
                return dict(rc.search(query, limit=limit))

        return await asyncio.to_thread(search)

    @method(server, "kiln/skills/install")
    async def skills_install(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        client, _, install = _skills_api()
        spec = require(params, "spec")
        scope = _scope(install, params, ls.root)
        yes = bool(params.get("yes", False))

        reviews: list[dict[str, Any]] = []

        def confirm(summary: dict[str, Any]) -> bool:
            reviews.append(summary)
            return yes

        def run() -> dict[str, Any]:
            installer = install.Installer(scope, yes=yes, confirm=confirm)
            with client.RegistryClient(client.default_registry(params.get("registry"))) as rc:
                done = installer.install(rc, spec)
            return {
                "id": done.id,
                "version": done.version,
                "path": str(done.path),
                "action": done.action,
            }

        try:
            return await asyncio.to_thread(run)
        except Exception as exc:
            if not reviews or yes:
                raise
            # The editor shows what would be installed and asks again with ``yes``.
            error = CoreError(
                str(exc), hint="show the review to the user, then call again with yes: true"
            )
            error.data = {"review": _jsonable(reviews[-1])}
            raise error from None

    @method(server, "kiln/skills/remove")
    async def skills_remove(ls: Any, params: dict[str, Any]) -> dict[str, Any]:
        _, _, install = _skills_api()
        skill_id = require(params, "id")
        scope = _scope(install, params, ls.root)
        path = await asyncio.to_thread(
            lambda: install.Installer(scope, force=bool(params.get("force"))).remove(skill_id)
        )
        return {"id": skill_id, "path": str(path)}


def _scope(install: Any, params: dict[str, Any], root: Path | None) -> Any:
    where = params.get("scope", "project")
    if where == "user":
        return install.Scope.user()
    if where != "project":
        from lsp_server.core import InvalidParams

        raise InvalidParams("scope must be 'project' or 'user'")
    return install.Scope.project(root or Path.cwd())


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=str))
