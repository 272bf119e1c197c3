"""How skill scripts and stdio MCP servers are started: the host may confine them.

The harness sets ``LAUNCHER`` (a context variable, so each session's tool calls see their own)
to a function ``(argv, cwd, env) -> (argv, env)`` that wraps the process in its OS sandbox and
scrubs the environment, and may say (``went_away``) that a process never started because the
sandbox lost a path it mounts meanwhile: prepared again, it starts, and (``track``) what to kill
beyond the process group when the process is stopped (a bubblewrap sandbox's pid 1, which leaves
the group as it starts). Unset, processes start as given.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol

Launcher = Callable[
    [list[str], "Path | None", "dict[str, str] | None"], tuple[list[str], dict[str, str]]
]
LAUNCHER: ContextVar[Launcher | None] = ContextVar("kiln_launcher", default=None)


def prepare(
    argv: list[str], cwd: Path | None, env: dict[str, str] | None
) -> tuple[list[str], dict[str, str] | None]:
    """The argv and environment to start, after the host's launcher (if any)."""
    launch = LAUNCHER.get()
    if launch is None:
        return argv, env
    return launch(argv, cwd, env)


def went_away(argv: list[str], code: int | None, output: bytes | str) -> bool:
    """Whether the process ``prepare`` gave ``argv`` for never started because the host's
    confinement lost a path it mounts in between (a daemon removed its socket): prepared again,
    it starts. ``output`` is all it printed (its stderr); ``code`` its exit status, None when not
    known."""
    check = getattr(LAUNCHER.get(), "went_away", None)
    return bool(check is not None and check(argv, code, output))


class Tracked(Protocol):
    """A process to start, followed past its process group: start ``argv`` with ``pass_fds``,
    call ``started()`` once the spawn is over, ``kill()`` right after killing its group,
    ``close()`` in the end."""

    argv: list[str]
    pass_fds: tuple[int, ...]

    def started(self) -> None: ...
    def kill(self) -> None: ...
    def close(self) -> None: ...


class Untracked:
    """No launcher, or one that follows nothing: ``argv`` as is, nothing past the group."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.pass_fds: tuple[int, ...] = ()

    def started(self) -> None:
        pass

    def kill(self) -> None:
        pass

    def close(self) -> None:
        pass


def track(argv: list[str]) -> Tracked:
    """What kills the process ``prepare`` gave ``argv`` for beyond its process group, from the
    host's launcher (a bubblewrap sandbox's pid 1 leaves the group as it starts)."""
    hook = getattr(LAUNCHER.get(), "track", None)
    return hook(argv) if hook is not None else Untracked(argv)  # type: ignore[no-any-return]
