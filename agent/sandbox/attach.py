"""Wiring a session to its sandbox: the policy from settings, the network grants the permission
check honours, the user's skill grants, and a one-time notice when commands run unconfined."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.events import StatusNote
from agent.rules import parse_rule
from agent.sandbox import Sandbox, load_policy
from agent.skill_grants import user_skill_grants


def attach(session: Any, kiln_home: Path) -> Sandbox:
    """Give a session its sandbox: the runner and the tools' services use it, the permissions
    learn the network grants and skill grants, deny rules become read-only/hidden paths."""
    config = session.config
    policy = load_policy(session.root, kiln_home, config.mode)
    setting = config.extra.get("sandbox", "auto")  # "auto" | "required" | "off"
    sandbox = Sandbox(
        session.root,
        policy,
        kiln_home=kiln_home,
        required=setting == "required",
        disabled=setting == "off",
    )
    session.runner.sandbox = sandbox
    session.services.sandbox = sandbox
    permissions = session.permissions
    permissions.network_rules = [parse_rule(r) for r in policy.network_commands]
    permissions.network_all = policy.network
    permissions.skill_grants = user_skill_grants(kiln_home)
    memory, root = session.memory, session.root
    permissions.memory_file = lambda: memory.project_file().relative_to(root).as_posix()
    for rule in permissions.rules.parsed("deny"):
        if rule.kind in ("write", "read"):
            paths = rule_paths(session.root, rule.pattern)
            (sandbox.readonly if rule.kind == "write" else sandbox.denied_reads).extend(paths)
    session.context.extensions.append(SandboxNotice(sandbox))
    return sandbox


class SandboxNotice:
    """Session extension: say in the host's status, once, how commands run when that is not
    confined and which project settings (sandbox keys, allow rules) were ignored; remove the private temp folder
    when the session closes."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.sent = False

    def tail_block(self, session: Any) -> str | None:
        return None

    async def before_request(self, session: Any) -> None:
        if self.sent:
            return
        self.sent = True
        rules = getattr(getattr(session, "permissions", None), "rules", None)
        for warning in [*getattr(rules, "warnings", []), *self.sandbox.policy.warnings]:
            await session.emit(StatusNote(text=warning))
        if not self.sandbox.confined:
            await session.emit(StatusNote(text=self.sandbox.status()))

    async def aclose(self) -> None:
        self.sandbox.close()


MAX_RULE_PATHS = 500


def rule_paths(root: Path, pattern: str | None) -> list[Path]:
    """The existing paths a deny rule's glob names, folders whole ("secrets/**" -> secrets)."""
    if pattern is None:
        return [root]
    if pattern.startswith("//"):
        base, glob = Path("/"), pattern[2:]
    elif pattern.startswith("~/"):
        base, glob = Path.home(), pattern[2:]
    elif pattern.startswith(str(root)):
        base, glob = root, pattern[len(str(root)) :].lstrip("/")
    else:
        base, glob = root, pattern.lstrip("/")
    while glob.endswith("/**") or glob.endswith("/*"):
        glob = glob.rsplit("/", 1)[0]
    if not glob or glob in ("**", "*"):
        return [base]
    found: list[Path] = []
    globs = [glob] if "/" in glob else [glob, f"**/{glob}"]  # like fnmatch: any folder
    for path in (p for g in globs for p in base.glob(g)):
        found.append(path)
        if len(found) >= MAX_RULE_PATHS:
            break
    return found
