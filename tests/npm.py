"""Node folders of the repository that several test processes use at once (pytest-xdist).

Two workers running `npm ci` in one folder remove each other's files (ENOTEMPTY, exit 254: every
test of that folder failed on a fresh checkout), and a worker that rebuilds ``dist/`` while
another loads it reads a half-written file. One worker at a time holds a folder: a lock file
outside the repository, ``flock``-ed, which the kernel lets go when its process ends.
"""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def holding(folder: Path) -> Iterator[None]:
    """``folder`` for this process alone until the block ends (others wait their turn)."""
    key = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    with (Path(tempfile.gettempdir()) / f"kiln-tests-npm-{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def npm_ci(npm: str, folder: Path, installed: Path, env: dict[str, str] | None = None) -> None:
    """`npm ci` in ``folder`` unless ``installed`` (a file the install makes) is there; CI runs
    it before the tests, a fresh checkout's first run here. Call it while holding ``folder``."""
    if not installed.exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=folder, env=env, check=True, timeout=600)  # fmt: skip
