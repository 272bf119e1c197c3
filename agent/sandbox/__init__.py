"""The OS sandbox around every command the agent starts (run_command, ``--verify``, skill
scripts, sidecar tools, stdio MCP servers).

``Sandbox`` turns a command into a confined one: on Linux through bubblewrap (``bwrap``), on
macOS through ``sandbox-exec``. Without a backend, commands run unconfined — unless the host made
the sandbox ``required`` (``kiln run --ci`` without ``--no-sandbox``) or the session is in the
``ci`` mode, whose commands nobody is asked about, in which case they are refused. The policy (``agent.sandbox.policy``) comes from the settings files; the network is off
unless granted for the command (a yes to a network command, ``network_commands``) or the session
(``network``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.errors import EXIT_USAGE, ToolError
from agent.sandbox import bwrap, git_credentials, seatbelt
from agent.sandbox.env import is_secret, scrub
from agent.sandbox.nested_files import NestedFiles
from agent.sandbox.pid_one import PidOne
from agent.sandbox.policy import SandboxPolicy, load_policy
from agent.write_policy import linked_targets
from kiln_errors.host_path import host_which

__all__ = ["SHELL", "Sandbox", "SandboxPolicy", "SandboxUnavailable", "find_backend", "load_policy"]

# The shell a command line runs in must read it as the check does (``agent.shell_parse``, bash's
# grammar): ``/bin/sh`` is dash on Debian, to which ``echo hi &>/dev/null rm -rf src`` is an
# ``echo`` in the background and then ``rm``. A host without bash runs ``/bin/sh``.
SHELL = next((s for s in ("/bin/bash", "/usr/bin/bash") if os.access(s, os.X_OK)), "/bin/sh")


class SandboxUnavailable(ToolError):
    """Commands are refused: the sandbox is required but no backend works here."""

    exit_code = EXIT_USAGE  # where it ends a run (``--verify``): a setup to fix, as docs/ci.md says


def find_backend(workspace: Path | None = None) -> tuple[str, str] | None:
    """(name, executable) of a working backend, or None. ``bwrap`` is looked up on a ``PATH``
    without relative entries and folders of ``workspace`` (``host_path``): a command must not
    plant the "sandbox" the next session starts."""
    if sys.platform == "darwin" and Path(seatbelt.SANDBOX_EXEC).exists():
        return "seatbelt", seatbelt.SANDBOX_EXEC
    exe = _bwrap_exe(workspace)
    if exe and _bwrap_problem(exe) is None:
        return "bwrap", exe
    return None


def no_backend_reason(workspace: Path | None = None) -> str:
    """Why ``find_backend`` found none, for the status line and the refusal."""
    if not sys.platform.startswith("linux"):
        return "no sandbox for this platform"
    exe = _bwrap_exe(workspace)
    if exe is None:
        return "no sandbox: install bubblewrap"
    return f"no sandbox: {_bwrap_problem(exe) or 'bubblewrap did not start'}"


def _bwrap_exe(workspace: Path | None) -> str | None:
    if not sys.platform.startswith("linux"):
        return None
    # KILN_BWRAP names the bubblewrap executable to use (one that is not there: none).
    named = os.environ.get("KILN_BWRAP")
    if named:
        return named if os.access(named, os.X_OK) else None
    return host_which("bwrap", [workspace] if workspace is not None else [])


@functools.cache
def _bwrap_problem(exe: str) -> str | None:
    """Why bubblewrap cannot confine commands here, or None. It must create its namespaces
    (unprivileged user namespaces may be disabled, e.g. by AppArmor) and take every option
    ``bwrap.build_argv`` gives it: one without ``--cap-drop`` (before 0.3) failed each command
    with "Unknown option" instead, so the probe uses them all."""
    probe = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
             "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--unshare-user-try", "--new-session", "--die-with-parent"]  # fmt: skip
    if _runs([*probe, "--cap-drop", "ALL", "--", "true"]):
        return None
    if _runs([*probe, "--", "true"]):
        return f"{exe} lacks --cap-drop (install bubblewrap 0.3 or later)"
    return f"{exe} cannot create its namespaces here"


def _runs(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def git_config_env(original: dict[str, str], env: dict[str, str]) -> dict[str, str]:
    """``env`` with git's command-line config (``GIT_CONFIG_COUNT``, ``_KEY_n``, ``_VALUE_n``)
    rebuilt after the scrub, which drops every ``_KEY_n`` for its name (git then refused every
    command: "missing config key"), plus ``safe.bareRepository=explicit``: a folder of a
    checkout shaped like a bare repository (``HEAD``, ``config``, ``objects``, plain files git
    ships) is otherwise a repository to git run inside it, whose config names programs
    (``diff.external``) that an allow rule for ``git diff *`` would run unasked.
    ``GIT_CONFIG_GLOBAL`` and ``GIT_CONFIG_SYSTEM`` stay: git in a command reads the files git
    outside it reads, and ``agent.git_revision`` looks an alias up in them too."""
    count = original.get("GIT_CONFIG_COUNT", "0")
    pairs = [
        (original[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"])
        for i in range(min(int(count), 1000) if count.isdigit() else 0)
        if f"GIT_CONFIG_KEY_{i}" in original and f"GIT_CONFIG_VALUE_{i}" in env
    ]  # a value that looked like a secret was scrubbed: its key goes too
    pairs = [(k, v) for k, v in pairs if not _secret_config(k, v)]
    pairs.append(("safe.bareRepository", "explicit"))
    kept = ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM")
    out = {k: v for k, v in env.items() if not k.startswith("GIT_CONFIG_") or k in kept}
    out["GIT_CONFIG_COUNT"] = str(len(pairs))
    for i, (key, value) in enumerate(pairs):
        out[f"GIT_CONFIG_KEY_{i}"], out[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return out


def _secret_config(key: str, value: str) -> bool:
    """A config entry holding a credential: ``http.extraHeader`` (``AUTHORIZATION: basic …``),
    a key named like a secret, a value with a token or a URL with a password in it."""
    name = key.upper().replace(".", "_").replace("-", "_")
    return name.endswith("EXTRAHEADER") or any(
        is_secret(name, word) for word in [value, *value.split()]
    )


class Sandbox:
    """One session's sandbox: its policy, its private temp folder, its backend."""

    def __init__(
        self,
        root: Path,
        policy: SandboxPolicy,
        *,
        kiln_home: Path,
        required: bool = False,
        disabled: bool = False,
    ) -> None:
        self.root = Path(root).resolve()
        self.policy = policy
        self.kiln_home = Path(kiln_home)
        self._required = required
        self.disabled = disabled
        # The session's permission mode (set by ``attach``): in ``ci`` nobody is asked before a
        # command runs, so the sandbox is what holds it, and without one commands are refused.
        self.mode: Callable[[], str] = lambda: ""
        self.backend = None if disabled or not policy.enabled else find_backend(self.root)
        self._tmp: Path | None = None
        self._copies: Path | None = None  # host folder of the files in ``_substitutes``
        # Paths the permission rules deny writing (read-only here) or reading (hidden here), so
        # a command cannot do through an interpreter what the rules refuse to a tool.
        self.readonly: list[Path] = []
        self.denied_reads: list[Path] = []
        # Workspace paths a command may not create (removed when it ends): the hooks folder
        # the repository's git config names, when it does not exist yet.
        self.guarded: list[str] = []
        # The index's gitlinks at session start (``agent.sandbox.gitlinks``), set by ``attach``.
        self.gitlinks: Any = None
        # Memory and shell-hook files in subfolders at the last look (``nested_files``).
        self._nested: NestedFiles | None = None
        self._hidden: list[Path] | None = None  # see ``hidden``

    @property
    def required(self) -> bool:
        return self._required or (not self.disabled and self.mode() == "ci")

    def _why_none(self) -> str:
        if self.disabled or not self.policy.enabled:
            return "the sandbox is switched off"
        return no_backend_reason(self.root)

    @property
    def confined(self) -> bool:
        return self.backend is not None

    def status(self) -> str:
        """One line for status bars: how commands run."""
        if self.backend is None:
            if self.required:
                return f"commands are refused: {self._why_none()} (or pass --no-sandbox)"
            return f"commands are unconfined ({self._why_none()})"
        net = "network on" if self.policy.network else "no network"
        return f"commands run in the {self.backend[0]} sandbox ({net} unless granted)"

    def tmp(self) -> Path:
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="kiln-sandbox-"))
        return self._tmp

    def check_usable(self) -> None:
        """Raise ``SandboxUnavailable`` when commands are refused here: required, no backend."""
        if self.backend is None and self.required:
            why = (
                "the sandbox is required" if self._required else "the ci mode runs commands unasked"
            )
            raise SandboxUnavailable(
                f"commands are refused: {why} and no backend is available "
                f"(bubblewrap on Linux, sandbox-exec on macOS; {self._why_none()})",
                suggestion="install bubblewrap (apt-get install bubblewrap) or run with --no-sandbox",
            )

    def wrap(self, argv: list[str], *, network: bool = False, cwd: Path | None = None) -> list[str]:
        """``argv`` as a confined command line (or as is, when unconfined and allowed)."""
        if self.backend is None:
            self.check_usable()
            return argv
        net = network or self.policy.network
        common = dict(
            root=self.root,
            tmp=self.tmp(),
            writable=list(self.policy.write),
            hidden=self.hidden(),
            readable=[self.kiln_home / "skills", *self._interpreter_dirs()],
            network=net,
            readonly=[
                *self.readonly,
                *self._own_environment(),
                *self.nested_files().paths(),
                *(p for paths in linked_targets(self.root) for p in paths),
            ],
        )
        if self.backend[0] == "seatbelt":
            return seatbelt.build_argv(argv, **common)  # type: ignore[arg-type]
        return bwrap.build_argv(
            self.backend[1], argv, cwd=Path(cwd or self.root), substitutes=self._substitutes(),
            **common,  # type: ignore[arg-type]
        )  # fmt: skip

    def hidden(self) -> list[Path]:
        """The hidden paths, each with where it led when the session's first command started:
        a command may turn a link in the workspace (``.env -> ../secrets/.env``) elsewhere, and
        the file it led to was no longer covered for the next command."""
        if self._hidden is None:
            entries = [*self.policy.hide, *self.denied_reads]
            self._hidden = list(dict.fromkeys(p for e in entries for p in (e, e.resolve())))
        return self._hidden

    def nested_files(self, fresh: bool = True) -> NestedFiles:
        """The memory and shell-hook files in subfolders (``sub/AGENTS.md``): read-only to the
        next command, and what the guard compares with when it ends. ``fresh=False``: as the
        command just wrapped saw them."""
        if self._nested is None or fresh:
            self._nested = (self._nested or NestedFiles(self.root)).refresh()
        return self._nested

    def _substitutes(self) -> dict[Path, Path]:
        """Files commands see in place of the real ones: the git config (and the files it
        includes) without the tokens a CI checkout left there (``git_credentials``), written
        afresh for each command."""
        out: dict[Path, Path] = {}
        for i, (path, clean) in enumerate(git_credentials.sanitized(self.root).items()):
            if self._copies is None:
                self._copies = Path(tempfile.mkdtemp(prefix="kiln-sandbox-copies-"))
            copy = self._copies / f"git-config-{i}"
            copy.unlink(missing_ok=True)
            copy.write_text(clean, encoding="utf-8")
            copy.chmod(0o444)
            out[path] = copy
        return out

    def _own_environment(self) -> list[Path]:
        """The Python environment Kiln runs from when it lies inside the workspace (Kiln installed
        into the project's ``.venv``), read-only like ``.git/hooks``: a ``.pth`` file or a
        ``sitecustomize.py`` a command wrote there would run in Kiln's next process, on the
        host, with the keys the sandbox keeps from commands."""
        prefixes = dict.fromkeys(Path(p).resolve() for p in (sys.prefix, sys.base_prefix))
        return [p for p in prefixes if self.root in p.parents]

    def _interpreter_dirs(self) -> list[Path]:
        """The Python environment Kiln runs from when it lies under ``/tmp`` (which the sandbox
        replaces with its own), given back read-only so ``python -m pytest`` and the venv's tools
        still run; never one that overlaps the workspace or ``$KILN_HOME``."""
        tmp, home = Path("/tmp").resolve(), self.kiln_home.resolve()
        out: list[Path] = []
        for prefix in dict.fromkeys(Path(p).resolve() for p in (sys.prefix, sys.base_prefix)):
            if tmp not in prefix.parents:
                continue
            overlaps = [self.root, home]
            if any(o == prefix or o in prefix.parents or prefix in o.parents for o in overlaps):
                continue
            out.append(prefix)
        return out

    def shell(self, command: str, *, network: bool = False, cwd: Path | None = None) -> list[str]:
        return self.wrap([SHELL, "-c", command], network=network, cwd=cwd)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for a command: secrets scrubbed when confined (and when required)."""
        original = dict(os.environ if base is None else base)
        if self.backend is None and not self.required:
            env = scrub(original, self.policy.env_pass) if self.policy.enabled else original
            return git_config_env(original, env)
        env = git_config_env(original, scrub(original, self.policy.env_pass))
        if self.backend is not None:
            env["TMPDIR"] = "/tmp" if self.backend[0] == "bwrap" else str(self.tmp())
        return env

    def launcher(self) -> SandboxLauncher:
        """The hook skills_registry calls to start skill scripts and stdio MCP servers; the
        network only when ``network_commands`` names the command line."""
        return SandboxLauncher(self)

    def went_away(self, argv: list[str], code: int | None, output: bytes | str) -> bool:
        """Whether the process ``argv`` (from ``wrap``) never started because a path its sandbox
        mounts went away in between (``bwrap.went_away``): wrapped again, it starts. ``code``
        None: not known (an MCP server's)."""
        if self.backend is None or self.backend[0] != "bwrap" or code not in (1, None):
            return False
        return len(output) <= 4096 and bwrap.went_away(argv, output)

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if self._copies is not None:
            shutil.rmtree(self._copies, ignore_errors=True)
            self._copies = None


class SandboxLauncher:
    """``skills_registry.launcher``'s hook for one session: ``(argv, cwd, env)`` -> the confined
    command line and its scrubbed environment; ``went_away`` says when to prepare it again."""

    def __init__(self, sandbox: Sandbox) -> None:
        from agent.rules import parse_rule

        self.sandbox = sandbox
        self.rules = [parse_rule(r) for r in sandbox.policy.network_commands]

    def __call__(
        self, argv: list[str], cwd: Path | None, env: dict[str, str] | None
    ) -> tuple[list[str], dict[str, str]]:
        network = any(r.matches_command(tuple(argv)) for r in self.rules)
        return self.sandbox.wrap(argv, network=network, cwd=cwd), self.sandbox.env(env)

    def went_away(self, argv: list[str], code: int | None, output: bytes | str) -> bool:
        return self.sandbox.went_away(argv, code, output)

    def track(self, argv: list[str]) -> PidOne:
        """The sandbox's pid 1, killed with a script's process group (``pid_one``)."""
        return PidOne.of(argv, self.sandbox)
