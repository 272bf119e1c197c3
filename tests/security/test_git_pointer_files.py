"""A hostile checkout's git pointer files cost a bounded read (docs/security.md section 8).

The `.git` file at a workspace root (`gitdir: …`, a linked worktree or a submodule checkout),
the `commondir` it leads to and the config files it includes are read when a session starts:
for the credentials CI redacts and for the git folders the sandbox keeps read-only. They were
read whole, so a `.git` file of gigabytes cost gigabytes of memory before the first turn. Now a
pointer file costs its first 4 KB and a config its first MB, and the pointer's first line is the
pointer (a NUL ends it, as it ends git's)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.sandbox.bwrap import named_git_dirs
from agent.sandbox.git_credentials import config_file, config_files, secrets

HUGE = 256 << 20  # sparse: the disk holds a page, a whole read allocates all of it
TOKEN = "ghs_PointerCanary0123456789"


def peak_bytes(call: Callable[[], object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def padded(path: Path, text: str) -> None:
    path.write_text(text)
    with path.open("r+b") as fh:
        fh.truncate(HUGE)


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    """A workspace whose `.git` file names a git folder inside it, as a submodule checkout's
    does, with a token in that folder's config."""
    root = tmp_path / "ws"
    gitdir = root / "modules" / "lib"
    gitdir.mkdir(parents=True)
    (gitdir / "config").write_text(f'[remote "o"]\n\turl = https://bot:{TOKEN}@example.com/r\n')
    return root


def test_a_huge_dotgit_file_is_read_a_line_at_most(worktree: Path) -> None:
    padded(worktree / ".git", "gitdir: modules/lib\n")
    dirs, peak = peak_bytes(lambda: named_git_dirs(worktree.resolve()))
    assert peak < 4 << 20, f"{peak} bytes allocated reading a {HUGE}-byte .git file"
    assert (worktree / "modules" / "lib").resolve() in dirs  # the pointer is still followed
    found, peak = peak_bytes(lambda: secrets(worktree))
    assert peak < 4 << 20, peak
    assert ("GIT_URL_CREDENTIALS", TOKEN) in found  # the token is still redacted


def test_a_huge_commondir_file_is_read_a_line_at_most(worktree: Path) -> None:
    (worktree / ".git").write_text("gitdir: modules/lib/worktrees/main\n")
    linked = worktree / "modules" / "lib" / "worktrees" / "main"
    linked.mkdir(parents=True)
    padded(linked / "commondir", "../..\n")
    path, peak = peak_bytes(lambda: config_file(worktree))
    assert peak < 4 << 20, peak
    assert path == (worktree / "modules" / "lib" / "config").resolve()


def test_a_nul_ends_the_pointer_as_it_ends_gits(worktree: Path) -> None:
    (worktree / ".git").write_bytes(b"gitdir: modules/lib\x00/../../elsewhere\n")
    assert config_file(worktree) == (worktree / "modules" / "lib" / "config").resolve()
    assert (worktree / "modules" / "lib").resolve() in named_git_dirs(worktree.resolve())


def test_a_huge_included_config_is_not_read(worktree: Path) -> None:
    (worktree / ".git").write_text("gitdir: modules/lib\n")
    big = worktree / "big.config"
    padded(big, f'[remote "x"]\n\turl = https://bot:{TOKEN}X@example.com/r\n')
    with (worktree / "modules" / "lib" / "config").open("a") as fh:
        fh.write(f"[include]\n\tpath = {big}\n")
    assert big.resolve() in config_files(worktree)
    found, peak = peak_bytes(lambda: secrets(worktree))
    assert peak < 4 << 20, peak
    assert ("GIT_URL_CREDENTIALS", TOKEN) in found  # the small config is still read


def test_a_fifo_dotgit_does_not_block(worktree: Path) -> None:
    """A `.git` FIFO (no writer ever comes) is no pointer: the read neither blocks nor fails."""
    import os

    os.mkfifo(worktree / ".git")
    assert config_file(worktree) is None
    assert named_git_dirs(worktree.resolve()) == []
    assert secrets(worktree) == []
