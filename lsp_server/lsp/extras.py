"""``kiln/hello``, ``kiln/index/status``, ``kiln/context/show``, ``kiln/models/list``, ``kiln/skills/*``.

Each one is a read of state that lives elsewhere (the index, the session store, the skills
libraries), done in a worker thread. Skills methods that need a registry answer "not available"
(-31005) when none is configured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_server.core import EDIT_MODES, CoreError, NotAvailable
from lsp_server.lsp.methods import SERVER_TO_CLIENT, kiln_method, registered
from lsp_server.lsp.params import (
    NoParams,
    SessionRef,
    SkillsInstallParams,
    SkillsRemoveParams,
    SkillsSearchParams,
)
from lsp_server.version import __version__

if TYPE_CHECKING:
    from lsp_server.lsp.server import KilnServer

PROTOCOL_VERSION = 1


def capabilities(ls: KilnServer) -> dict[str, Any]:
    """What this server offers; also sent in ``initialize`` as ``experimental.kiln``."""
    from agent.permissions import MODES

    return {
        "protocolVersion": PROTOCOL_VERSION,
        "serverVersion": __version__,
        "methods": registered(ls),
        "clientMethods": list(SERVER_TO_CLIENT),
        "modes": list(MODES),
        "editModes": list(EDIT_MODES),
        "promptContent": ["text", "resource_link", "resource"],
        "positionEncoding": ls.frontend.position_encoding,
        "changeAnnotations": ls.frontend.annotations_supported,
        "applyEdit": ls.frontend.apply_edit_supported,
        "loadSession": True,
        "hardCancel": True,
    }


@kiln_method("kiln/hello")
async def hello(ls: KilnServer, params: NoParams) -> dict[str, Any]:
    caps = capabilities(ls)
    return {
        "protocolVersion": caps.pop("protocolVersion"),
        "serverVersion": caps.pop("serverVersion"),
        "root": str(ls.root) if ls.root else None,
        "capabilities": caps,
        "config": {
            "mode": ls.config.mode,
            "editMode": ls.config.edit_mode,
            "provider": ls.config.provider,
            "model": ls.config.model,
            "permissionTimeout": ls.config.permission_timeout,
        },
        **({"configError": ls.config_error} if ls.config_error else {}),
    }


@kiln_method("kiln/index/status")
async def index_status(ls: KilnServer, params: NoParams) -> dict[str, Any]:
    if ls.index_sync is None:
        raise NotAvailable("the server is not initialized")
    return dict(await ls.index_sync.status())


@kiln_method("kiln/context/show")
async def context_show(ls: KilnServer, params: SessionRef) -> dict[str, Any]:
    from lsp_server.core.commands import context_report

    return await context_report(ls.core(), params.session_id)


@kiln_method("kiln/skills/list")
async def skills_list(ls: KilnServer, params: NoParams) -> dict[str, Any]:
    from skills_registry import discovery

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


def _registry(explicit: str | None) -> str:
    """The registry URL to use; "not available" (-31005) when none is configured."""
    from skills_registry import client

    try:
        return client.default_registry(explicit)
    except client.NoRegistry as exc:
        raise NotAvailable(str(exc), hint=exc.hint or None) from None


@kiln_method("kiln/skills/search")
async def skills_search(ls: KilnServer, params: SkillsSearchParams) -> dict[str, Any]:
    from skills_registry import client

    url = _registry(params.registry)

    def search() -> dict[str, Any]:
        with client.RegistryClient(url) as rc:
            return dict(rc.search(params.query, limit=params.limit))

    return await asyncio.to_thread(search)


@kiln_method("kiln/skills/install")
async def skills_install(ls: KilnServer, params: SkillsInstallParams) -> dict[str, Any]:
    from skills_registry import client, install

    url = _registry(params.registry)
    scope = _scope(params.scope, ls.root)
    reviews: list[dict[str, Any]] = []

    def confirm(summary: dict[str, Any]) -> bool:
        reviews.append(summary)
        return params.yes

    def run() -> dict[str, Any]:
        installer = install.Installer(scope, yes=params.yes, confirm=confirm)
        with client.RegistryClient(url) as rc:
            done = installer.install(rc, params.spec)
        return {
            "id": done.id,
            "version": done.version,
            "path": str(done.path),
            "action": done.action,
        }

    try:
        return await asyncio.to_thread(run)
    except Exception as exc:
        if not reviews or params.yes:
            raise
        # The editor shows what would be installed and asks again with ``yes``.
        error = CoreError(
            str(exc), hint="show the review to the user, then call again with yes: true"
        )
        error.data = {"review": _jsonable(reviews[-1])}
        raise error from None


@kiln_method("kiln/skills/remove")
async def skills_remove(ls: KilnServer, params: SkillsRemoveParams) -> dict[str, Any]:
    from skills_registry import install

    scope = _scope(params.scope, ls.root)
    path = await asyncio.to_thread(
        lambda: install.Installer(scope, force=params.force).remove(params.id)
    )
    return {"id": params.id, "path": str(path)}


@kiln_method("kiln/models/list")
async def models_list(ls: KilnServer, params: NoParams) -> dict[str, Any]:
    """The models the configured provider offers (see agent/providers/catalog.py)."""
    from agent.errors import ConfigError
    from agent.providers import catalog

    config = {"provider": ls.config.provider, "model": ls.config.model}
    try:
        return await catalog.list_models(config)
    except ConfigError as exc:
        raise NotAvailable(str(exc), hint=exc.hint) from None


HANDLERS: list[Callable[..., Awaitable[Any]]] = [
    hello, index_status, context_show, skills_list, skills_search, skills_install, skills_remove,
    models_list,
]  # fmt: skip


def _scope(where: str, root: Path | None) -> Any:
    from skills_registry import install

    if where == "user":
        return install.Scope.user()
    return install.Scope.project(root or Path.cwd())


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=str))
