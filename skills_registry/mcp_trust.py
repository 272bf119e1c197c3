"""Which configured MCP servers may start: the user's always, a repository's only once the user
approved that exact entry for that workspace.

A repository's ``.kiln/mcp.json`` is text from outside the user's trust: started unasked, a stdio
entry runs a program of the repository's choosing and an HTTP entry makes Kiln itself (outside
the sandbox) send tool arguments to a host of the repository's choosing. So a project entry
starts only when ``$KILN_HOME/mcp-approvals.json`` holds, for this workspace and this name, the
sha256 of the entry as written (``kiln mcp approve``); an entry changed since is pending again.
A project entry never replaces a user entry of the same name (the user's is used, the project's
ignored with a warning), nor takes the namespace of sidecar tools one of the user's skills declares. The user may trust every project server with
``{"mcp": {"trust_project_servers": true}}`` in ``$KILN_HOME/settings.json``; the caller decides
whether that blanket setting counts (``kiln run --ci`` does not honour it). Nothing in the
repository (its settings, a planted approvals file) is ever read as an approval.

A host may pass servers for one session (an ACP client's ``mcpServers``: the user's editor, so
the user's trust). They start unasked and, for that session, replace a user or project entry of
the same name (what other ACP agents do); they are never written to a file.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skills_registry import config_file, json_limits
from skills_registry.deferred import api_safe
from skills_registry.discovery import discover_skills
from skills_registry.errors import McpConfigError
from skills_registry.local_state import sweep_temps
from skills_registry.mcp_config import (
    McpServerConfig,
    default_kiln_home,
    printable,
    project_config_path,
    read_config,
    shown_name,
    user_config_path,
)

APPROVALS_FILE = "mcp-approvals.json"
TRUST_SETTING = "trust_project_servers"
# Keys other clients use to approve project servers; in a repository's settings they are ignored.
PROJECT_APPROVAL_KEYS = ("mcp", "enableAllProjectMcpServers", "enabledMcpjsonServers")
SUMMARY_CHARS = 160
MAX_NOTES = 20  # lines a host shows, one per server not started; then how many more

Status = Literal[
    "client",
    "user",
    "approved",
    "trusted",
    "pending",
    "changed",
    "shadowed",
    "skill",
    "replaced",
    "disabled",
]
RUNNABLE: frozenset[str] = frozenset({"client", "user", "approved", "trusted"})


@dataclass
class ServerState:
    config: McpServerConfig
    status: Status
    skill: Path | None = None  # status "skill": the user's skill whose tools the name would take

    @property
    def runnable(self) -> bool:
        return self.status in RUNNABLE

    def note(self, root: Path) -> str | None:
        """The line a host shows for a server it does not start; None for one it starts."""
        name = shown_name(self.config.name)
        quoted = f"{shlex.quote(self.config.name)} --root {shlex.quote(str(root))}"
        approve = printable(f"kiln mcp approve {quoted}")
        what = printable(self.config.summary(), SUMMARY_CHARS)
        if self.status == "pending":
            return (
                f"MCP server {name} from .kiln/mcp.json not started: not approved for this "
                f"workspace ({what}); to approve it: {approve}"
            )
        if self.status == "changed":
            return (
                f"MCP server {name} from .kiln/mcp.json not started: its entry changed since you "
                f"approved it ({what}); to approve the new entry: {approve}"
            )
        if self.status == "shadowed":
            return (
                f".kiln/mcp.json: server {name} ignored: your server of that name in "
                "$KILN_HOME/mcp.json is used"
            )
        if self.status == "replaced":
            where = "$KILN_HOME/mcp.json" if self.config.scope == "user" else ".kiln/mcp.json"
            return (
                f"MCP server {name} from {where} not used in this session: the client's server "
                "of that name replaces it"
            )
        if self.status == "skill":
            return printable(
                f".kiln/mcp.json: server {self.config.name} ignored: your skill of that name in "
                f"{self.skill} declares those tools"
            )
        return None


@dataclass
class McpPlan:
    """Every server with its status: the client's for this session, the user's, the project's."""

    root: Path
    servers: list[ServerState] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def runnable(self) -> list[McpServerConfig]:
        return [s.config for s in self.servers if s.runnable]

    def notes(self) -> list[str]:
        """Warnings, then one line per server that is not started."""
        lines = list(self.warnings)
        notes = [n for s in self.servers if (n := s.note(self.root))]
        lines.extend(notes[:MAX_NOTES])
        if len(notes) > MAX_NOTES:  # a checkout's mcp.json may name 30,000 servers
            listing = printable(f"kiln mcp list --root {shlex.quote(str(self.root))}")
            lines.append(
                f"… and {len(notes) - MAX_NOTES} more MCP servers not started or ignored "
                f"({listing} shows each)"
            )
        return lines

    def project(self, name: str) -> ServerState | None:
        return next(
            (s for s in self.servers if s.config.scope == "project" and s.config.name == name),
            None,
        )

    def user(self, name: str) -> ServerState | None:
        return next(
            (s for s in self.servers if s.config.scope == "user" and s.config.name == name), None
        )


def workspace_key(root: Path) -> str:
    return str(Path(root).resolve())


def approvals_path(kiln_home: Path) -> Path:
    return kiln_home / APPROVALS_FILE


def _read_approvals_file(kiln_home: Path) -> dict[str, Any]:
    path = approvals_path(kiln_home)
    try:
        data = json_limits.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"workspaces": {}}
    except (OSError, ValueError) as exc:
        raise McpConfigError(
            f"cannot read {path}: {exc}", hint="fix or delete the file (it only holds approvals)"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("workspaces", {}), dict):
        raise McpConfigError(
            f'{path} must hold {{"workspaces": {{...}}}}', hint="fix or delete the file"
        )
    data.setdefault("workspaces", {})
    return data


def read_approvals(kiln_home: Path, root: Path) -> dict[str, str]:
    """``{server name: approved entry sha256}`` for this workspace."""
    entries = _read_approvals_file(kiln_home)["workspaces"].get(workspace_key(root), {})
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, str)}


@contextmanager
def _approvals_locked(kiln_home: Path) -> Iterator[None]:
    """One writer of the approvals file at a time: each write is the whole file, read just
    before, so two `kiln mcp approve` at once kept only the last one's approval."""
    kiln_home.mkdir(parents=True, exist_ok=True)
    with open(kiln_home / f".{APPROVALS_FILE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield  # the lock goes with the file's closing


def _write_approvals(kiln_home: Path, root: Path, entries: dict[str, str]) -> None:
    data = _read_approvals_file(kiln_home)
    key = workspace_key(root)
    if entries:
        data["workspaces"][key] = dict(sorted(entries.items()))
    else:
        data["workspaces"].pop(key, None)
    path = approvals_path(kiln_home)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)  # never half-written
    sweep_temps(path.parent, path.name)  # what killed writes left, an hour old


def approve(kiln_home: Path, root: Path, configs: list[McpServerConfig]) -> None:
    """Record the user's approval of these project entries, exactly as they are now."""
    for config in configs:
        if config.scope != "project":
            raise McpConfigError(f"server {shown_name(config.name)} is not a project server")
        if config.unheld:
            raise McpConfigError(
                f"server {shown_name(config.name)} cannot be approved: {printable(config.unheld)}",
                hint="name its script in the entry's args instead",
            )
    with _approvals_locked(kiln_home):
        entries = read_approvals(kiln_home, root)
        entries.update({config.name: config.fingerprint for config in configs})
        _write_approvals(kiln_home, root, entries)


def revoke(kiln_home: Path, root: Path, names: list[str] | None) -> list[str]:
    """Forget approvals (all of this workspace's when ``names`` is None); the names removed."""
    held = read_approvals(kiln_home, root)
    if not (held if names is None else set(names) & set(held)):
        return []  # nothing to forget: no file touched (a read-only KILN_HOME included)
    with _approvals_locked(kiln_home):
        entries = read_approvals(kiln_home, root)
        gone = sorted(entries) if names is None else [n for n in names if n in entries]
        for name in gone:
            del entries[name]
        if gone:
            _write_approvals(kiln_home, root, entries)
    return gone


def trust_setting(kiln_home: Path) -> tuple[bool, list[str]]:
    """The user's blanket ``mcp.trust_project_servers`` (and a warning if it cannot be read)."""
    path = kiln_home / "settings.json"
    try:
        data = config_file.load_json(path)
    except FileNotFoundError:
        return False, []
    except (OSError, ValueError) as exc:
        return False, [f"cannot read {path} ({exc}): project MCP servers need approval"]
    section = data.get("mcp") if isinstance(data, dict) else None
    value = section.get(TRUST_SETTING, False) if isinstance(section, dict) else False
    if not isinstance(value, bool):
        return False, [f"{path}: mcp.{TRUST_SETTING} must be true or false; treated as false"]
    return value, []


def project_setting_warnings(root: Path) -> list[str]:
    """A repository's settings cannot approve servers: say so when they try."""
    path = Path(root) / ".kiln" / "settings.json"
    try:
        data = config_file.load_json(path)
    except (OSError, ValueError):
        return []  # absent, or malformed: the permission rules report that one
    if not isinstance(data, dict):
        return []
    return [
        f".kiln/settings.json: {key} ignored (only the user approves MCP servers: kiln mcp approve)"
        for key in PROJECT_APPROVAL_KEYS
        if key in data
    ]


def user_skill_tools(root: Path, kiln_home: Path) -> dict[str, Path]:
    """Tool namespace -> folder of each of the user's skills that declares sidecar tools: a
    project server of that name would answer the calls meant for them."""
    catalog = discover_skills(root, kiln_home=kiln_home)
    return {
        api_safe(s.name): s.path
        for s in catalog.skills.values()
        if s.scope == "user" and (s.path / "tools").is_dir()
    }


def plan_servers(
    root: Path,
    kiln_home: Path | None = None,
    *,
    honour_trust_setting: bool = True,
    client: list[McpServerConfig] | None = None,
) -> McpPlan:
    """Every configured server and whether it may start; ``McpConfigError`` if a file is
    malformed (then nothing starts: a broken user file must not un-shadow a project entry).
    ``client``: servers passed for this session only; they replace configured ones by name."""
    root = Path(root)
    home = kiln_home if kiln_home is not None else default_kiln_home()
    user = read_config(user_config_path(home), "user")
    project = read_config(project_config_path(root), "project")
    plan = McpPlan(root=root.resolve(), warnings=project_setting_warnings(root))
    if project_config_path(root).resolve() == user_config_path(home).resolve():
        project = {}  # the workspace is KILN_HOME's parent: the file is the user's own
    trusted = False
    if project and honour_trust_setting:
        trusted, problems = trust_setting(home)
        plan.warnings.extend(problems)
    approved: dict[str, str] = {}
    if project:
        try:
            approved = read_approvals(home, root)
        except McpConfigError as exc:
            plan.warnings.append(f"{exc}: no project MCP server is approved")
    user_namespaces = {api_safe(name) for name in user}
    client_namespaces = {api_safe(c.name) for c in client or []}
    skill_tools = user_skill_tools(root, home) if project else {}
    plan.servers.extend(ServerState(config, "client") for config in client or [])
    plan.servers.extend(
        ServerState(
            config,
            "replaced"
            if api_safe(name) in client_namespaces
            else "disabled"
            if config.disabled
            else "user",
        )
        for name, config in user.items()
    )
    for name, config in project.items():
        status: Status
        if api_safe(name) in client_namespaces:
            status = "replaced"
        elif config.disabled and api_safe(name) not in user_namespaces:
            status = "disabled"
        elif api_safe(name) in user_namespaces:
            status = "shadowed"
        elif api_safe(name) in skill_tools:
            plan.servers.append(ServerState(config, "skill", skill_tools[api_safe(name)]))
            continue
        elif approved.get(name) == config.fingerprint:
            status = "approved"
        elif trusted:
            status = "trusted"
        else:
            status = "changed" if name in approved else "pending"
        plan.servers.append(ServerState(config, status))
    return plan
