"""Wiring a session to its sandbox: the policy from settings, the network grants the permission
check honours, the user's skill grants, and a one-time notice when commands run unconfined."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path
from typing import Any

from agent.events import StatusNote
from agent.rules import parse_rule
from agent.sandbox import Sandbox, load_policy
from agent.sandbox.bwrap import MODULE_PROTECTED, named_git_dirs, pointed_git_dir
from agent.sandbox.git_includes import included_configs
from agent.sandbox.gitlinks import MAX_DEPTH, MAX_NESTED, GitlinkGuard
from agent.sandbox.policy import credential_files
from agent.skill_grants import user_skill_grants
from agent.tree_walk import walk
from kiln_errors.host_path import host_env


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
    sandbox.mode = lambda: permissions.mode  # the live mode: a client may switch to ci later
    permissions.network_rules = [parse_rule(r) for r in policy.network_commands]
    permissions.network_all = policy.network
    permissions.skill_grants = lambda: user_skill_grants(kiln_home)
    permissions.deny_reads(credential_files())  # hidden from commands too (policy)
    memory, root = session.memory, session.root
    permissions.memory_file = lambda: memory.project_file().relative_to(root).as_posix()
    deny = permissions.rules.parsed("deny")
    project = permissions.rules.project_deny
    shared = WalkBudget(MAX_PROJECT_WALKED)  # the repository's rules, after the user's
    for i, rule in (*enumerate(deny[project:], project), *enumerate(deny[:project])):
        if rule.kind in ("write", "read"):
            budget = shared if i < project else WalkBudget(MAX_WALKED)
            paths = rule_paths(session.root, rule.pattern, budget)
            if rule.kind == "write":  # a bind covers where a link leads, not the link
                paths += linked_inside(session.root, paths)
            (sandbox.readonly if rule.kind == "write" else sandbox.denied_reads).extend(paths)
            if rule.kind == "write":
                sandbox.guarded += absent_rule_path(session.root, rule.pattern)
    hooks = hooks_folder(session.root)
    sandbox.gitlinks = GitlinkGuard(session.root)
    includes = included_configs(session.root, sandbox.gitlinks.repositories())
    host_run = [*([hooks] if hooks is not None else []), *named_git_dirs(session.root), *includes]
    session.services.workspace.host_run[:] = host_run  # the file tools never write there
    permissions.host_run = session.services.workspace.host_run
    if hooks is not None and session.root in hooks.parents and hooks != session.root / ".git/hooks":
        if hooks.exists():
            sandbox.readonly.append(hooks)
        else:
            sandbox.guarded.append(hooks.relative_to(session.root).as_posix())
    for config in includes:  # git config by inclusion: as read-only as .git/config
        if config.exists():
            sandbox.readonly.append(config)
        else:
            sandbox.guarded.append(config.relative_to(session.root.resolve()).as_posix())
    for path in nested_git_config(sandbox.gitlinks):  # absent: removed if a command makes it
        if path.exists() or path.is_symlink():
            sandbox.readonly.append(path)
        elif session.root.resolve() in path.parents:
            sandbox.guarded.append(path.relative_to(session.root.resolve()).as_posix())
    session.context.extensions.append(SandboxNotice(sandbox))
    return sandbox


def absent_rule_path(root: Path, pattern: str | None) -> list[str]:
    """A write deny rule's workspace file that does not exist yet (``Write(.env)``), named
    without a glob: a read-only bind cannot cover it, so a command that creates it gets it
    removed when it ends, like a memory file (``agent.sandbox.guard``)."""
    if not pattern or any(ch in pattern for ch in "*?[") or pattern.startswith(("//", "~")):
        return []
    path = Path(os.path.normpath(root / pattern.lstrip("/")))
    if root not in path.parents or path.exists() or path.is_symlink():
        return []
    return [path.relative_to(root).as_posix()]


def nested_git_config(guard: GitlinkGuard, root: Path | None = None) -> list[Path]:
    """What of the user's nested repositories (gitlinks populated when the session started, at
    every depth the guard watches) makes ``git status`` run a program: a ``gitdir:`` pointer and
    the config, hooks and ``commondir`` of the git folder it names inside the workspace (a
    submodule's ``.git/modules/NAME``, which ``submodule_config``'s bounded walk may not reach:
    a name may be a path 300 folders deep), or those of a ``.git`` folder."""
    root = Path(root or guard.root).resolve()
    out: list[Path] = []
    for rel, child in guard.children.items():
        dotgit = guard.root / rel / ".git"
        if dotgit.is_symlink():
            continue
        if dotgit.is_file():
            out.append(dotgit)
            named = pointed_git_dir(dotgit)
            if named is not None and root in named.parents:
                out += [named / name for name in MODULE_PROTECTED]
        else:
            out += [dotgit / name for name in MODULE_PROTECTED]
        out += nested_git_config(child, root)
    return out


def hooks_folder(root: Path) -> Path | None:
    """The hooks folder git uses in ``root`` (``core.hooksPath`` honoured: ``.githooks``,
    husky's ``.husky/_``), or None outside a repository. Inside the workspace it is as
    read-only as ``.git/hooks``: a hook planted there runs at the user's next commit, on the host.
    ``rev-parse`` runs no hook, filter or fsmonitor."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        proc = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "rev-parse", "--git-path", "hooks"],
            cwd=root, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
            env=host_env([root], {**env, "GIT_CONFIG_NOSYSTEM": "1", "GIT_ALLOW_PROTOCOL": "",
                                  "GIT_TERMINAL_PROMPT": "0"}),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = proc.stdout.strip()
    return (root / out).resolve() if proc.returncode == 0 and out else None


class SandboxNotice:
    """Session extension: say in the host's status, once, how commands run when that is not
    confined, which project settings (sandbox keys, allow rules) were ignored, and how many of
    the user's nested repositories are not guarded; remove the private temp folder when the
    session closes."""

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
        elif self.sandbox.gitlinks is not None and (left := self.sandbox.gitlinks.unwatched()):
            await session.emit(StatusNote(text=unwatched_note(left)))

    async def aclose(self) -> None:
        self.sandbox.close()


def unwatched_note(left: int) -> str:
    """One line on the nested repositories ``GitlinkGuard`` left out (see ``MAX_NESTED``)."""
    them = "repository" if left == 1 else "repositories"
    return (
        f"sandbox: {left} nested {them} past the first {MAX_NESTED} in a repository (or more than"
        f" {MAX_DEPTH} levels down) not guarded: commands can change their git config and hooks,"
        " which the next git status runs on the host (docs/security.md, known limits)"
    )


MAX_RULE_PATHS = 500


class WalkBudget:
    """Folders the walks for deny rules may still look into."""

    def __init__(self, folders: int) -> None:
        self.left = folders


def linked_inside(root: Path, paths: list[Path]) -> list[Path]:
    """Where the links among ``paths`` lead, when that is inside the workspace (``config/app.yml
    -> ../shared/app.yml``): a read-only bind cannot be made on a link itself."""
    inside = Path(root).resolve()
    out = []
    for path in paths:
        if path.is_symlink():
            real = path.resolve()
            if inside in real.parents and real.exists():
                out.append(real)
    return out


def rule_paths(root: Path, pattern: str | None, budget: WalkBudget | None = None) -> list[Path]:
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
    glob = glob.rstrip("/")
    while glob.endswith("/**") or glob.endswith("/*"):
        glob = glob.rsplit("/", 1)[0]
    if not glob or glob in ("**", "*"):
        return [base]
    parts = glob.split("/") if "/" in glob else ["**", glob]  # like fnmatch: any folder
    # The permission check matches the whole path with fnmatch, whose `*` and `?` also match a
    # `/`: `conf/*.env` names `conf/sub/b.env` too, so such a part may span folders here.
    spans = "/" in glob and any(p != "**" and ("*" in p or "?" in p) for p in parts)
    return bounded_glob(base, parts, budget, whole=glob if spans else None)


MAX_WALKED = 10_000  # folders a rule's glob may look into (a rule may come from the repository)
# Folders the repository's rules look into together: a checkout shipping 30,000 `Read(**/xN)`
# rules (its settings file may hold 1 MB) walked its tree 30,000 times at every session start.
MAX_PROJECT_WALKED = 20_000
NOT_WALKED = ("/proc", "/sys", "/dev")


def bounded_glob(
    base: Path, parts: list[str], budget: WalkBudget | None = None, *, whole: str | None = None
) -> list[Path]:
    """Existing paths under ``base`` matching the glob segments (``**`` any folders), found by a
    walk that follows no symlinks, skips what it cannot list and ``/proc``, ``/sys``, ``/dev``,
    and stops after ``MAX_WALKED`` folders or ``MAX_RULE_PATHS`` matches: a rule such as
    ``Read(//**/x)`` must not walk the whole machine at every session start. ``whole``: the
    glob as fnmatch reads it, ``*`` across folders, which a path may match instead."""
    found: list[Path] = []
    # in any case, as the permission check matches (``agent.rules``): a rule on ``secrets/**``
    # refused ``read_file Secrets/key``, while a command read it
    parts = [p.casefold() for p in parts]
    whole = whole.casefold() if whole is not None else None
    lead = [p if whole is None or ("*" not in p and "?" not in p) else "**" for p in parts]
    budget = budget if budget is not None else WalkBudget(MAX_WALKED)
    if budget.left <= 0:
        return found
    walked_folders = walk(base, onerror=lambda _exc: None)
    for folder, dirs, files in walked_folders:
        budget.left -= 1
        here = Path(folder)
        rel = [r.casefold() for r in here.relative_to(base).parts]
        dirs[:] = [
            d
            for d in dirs
            if str(here / d) not in NOT_WALKED and _may_lead([*rel, d.casefold()], lead)
        ]
        last = parts[-1]  # never "**": trailing ones are stripped by rule_paths
        for name in (*dirs, *files):
            folded = name.casefold()
            if (fnmatch.fnmatchcase(folded, last) and _matches([*rel, folded], parts)) or (
                whole is not None and fnmatch.fnmatchcase("/".join([*rel, folded]), whole)
            ):
                found.append(here / name)
                if len(found) >= MAX_RULE_PATHS:
                    return found
        if budget.left <= 0:
            break
    return found


def _may_lead(path: list[str], parts: list[str]) -> bool:
    """Whether a folder could hold a match below it: the walk enters only those, so
    ``//home/me/x`` looks into three folders, not into every folder under ``/`` in turn (it
    stopped at the bound long before reaching a path outside ``/bin``… and ``/usr``)."""

    # lead[i][j]: path[i:] can still be matched by a prefix of parts[j:] with more to come.
    # Filled from the end, not recursively: a checkout's folders may nest a thousand deep.
    n, m = len(path), len(parts)
    lead = [[False] * (m + 1) for _ in range(n + 1)]
    for j in range(m):
        lead[n][j] = True
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if parts[j] == "**":
                lead[i][j] = lead[i][j + 1] or lead[i + 1][j]
            else:
                lead[i][j] = fnmatch.fnmatchcase(path[i], parts[j]) and lead[i + 1][j + 1]
    return lead[0][0]


def _matches(path: list[str], parts: list[str]) -> bool:
    """Whether the path's segments match the glob's (``**``: any number of segments); tabulated
    by position, so a rule of many ``**`` stays linear in path length times pattern length."""

    # match[i][j]: path[i:] matches parts[j:]; filled from the end, not recursively.
    n, m = len(path), len(parts)
    match = [[False] * (m + 1) for _ in range(n + 1)]
    match[n][m] = True
    for i in range(n, -1, -1):
        for j in range(m - 1, -1, -1):
            if parts[j] == "**":
                match[i][j] = match[i][j + 1] or (i < n and match[i + 1][j])
            else:
                match[i][j] = (
                    i < n and fnmatch.fnmatchcase(path[i], parts[j]) and match[i + 1][j + 1]
                )
    return match[0][0]
