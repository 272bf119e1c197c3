"""``skills-lock.json``: what is installed, from where, and the hashes that prove it.

Written sorted and without timestamps so it diffs cleanly and two identical installs produce
byte-identical files. An entry pins the exact version, the archive sha256 and signature (to
re-verify an offline install) and the tree hash (to notice a locally modified skill).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: last writer wins
    fcntl = None  # type: ignore[assignment]

from skills_registry import config_file
from skills_registry.local_state import sweep_temps, write_atomically
from skills_registry.registry.errors import UsageError, WriteFailed
from skills_registry.registry.semver import is_version, normal_range

LOCK_NAME = "skills-lock.json"
LOCK_VERSION = 1
MAX_BYTES = 64 << 20  # far beyond any real lockfile


@dataclass
class LockEntry:
    id: str
    version: str
    requested: str
    registry: str
    sha256: str
    treeHash: str  # noqa: N815 - the JSON key, kept verbatim
    signature: str
    keyId: str  # noqa: N815
    path: str
    scripts: list[str] = field(default_factory=list)
    # allowed-tools the user granted at install/review (shown the list, said yes); only these
    # ever widen permissions, and only from the user's own lockfile (agent.skill_grants).
    grants: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, skill_id: str, data: Any) -> LockEntry:
        if not isinstance(data, dict):
            raise UsageError(f"lockfile entry {skill_id!r} is not an object")
        try:
            entry = cls(
                id=skill_id,
                **{k: data[k] for k in cls.__dataclass_fields__ if k != "id" and k in data},
            )
        except TypeError as exc:
            raise UsageError(
                f"lockfile entry {skill_id!r} is incomplete ({exc})",
                hint="delete the entry and install the skill again",
            ) from None
        bad = entry.invalid_field()
        if not bad:  # written before ranges were normalised: the next write stores it so
            entry.requested = normal_range(entry.requested)
        if bad:
            raise UsageError(
                f"lockfile entry {skill_id!r} has an invalid {bad!r}",
                hint="delete the entry and install the skill again",
            )
        return entry

    def invalid_field(self) -> str:
        """The first field of the wrong type or form (the file may come from a checkout)."""
        for name in ("requested", "registry", "treeHash", "signature", "keyId", "path"):
            if not isinstance(getattr(self, name), str):
                return name
        if not isinstance(self.version, str) or not is_version(self.version):
            return "version"
        if not isinstance(self.sha256, str) or not re.fullmatch(r"[0-9a-f]{64}", self.sha256):
            return "sha256"
        for name in ("scripts", "grants"):
            value = getattr(self, name)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return name
        return ""


class Lockfile:
    def __init__(self, path: Path, entries: dict[str, LockEntry] | None = None) -> None:
        self.path = Path(path)
        self.entries: dict[str, LockEntry] = entries or {}

    @classmethod
    def load(cls, path: Path) -> Lockfile:
        path = Path(path)
        try:  # a regular file only: a FIFO left at the name must not hang every command
            data = config_file.load_json(path, MAX_BYTES)
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise UsageError(
                f"cannot read {path}: {reason}", hint="fix or delete the lockfile"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("skills"), dict):
            raise UsageError(f"{path} is not a skills lockfile (no 'skills' object)")
        version = data.get("lockfileVersion", LOCK_VERSION)
        if not isinstance(version, int) or version > LOCK_VERSION:
            # rewriting it would drop what the newer format added
            raise UsageError(
                f"{path} was written by a newer Kiln (lockfileVersion {version!r}; "
                f"this Kiln writes {LOCK_VERSION})",
                hint="upgrade Kiln to change this project's skills",
            )
        return cls(path, {k: LockEntry.from_json(k, v) for k, v in data["skills"].items()})

    def to_text(self) -> str:
        skills = {
            k: {f: v for f, v in asdict(e).items() if f != "id" and not (f == "grants" and not v)}
            for k, e in sorted(self.entries.items())
        }
        return (
            json.dumps(
                {"lockfileVersion": LOCK_VERSION, "skills": skills}, indent=2, sort_keys=True
            )
            + "\n"
        )

    def save(self) -> None:
        """Write atomically (temp file + rename) so a crash never leaves half a lockfile."""
        write_atomically(self.path, self.to_text().encode("utf-8"))


def _guard(path: Path, name: str) -> IO[str]:
    """An open lock file under ``.kiln/locks`` beside the lockfile (Kiln's own, git-ignored)."""
    locks = Path(path).parent / ".kiln" / "locks"
    try:
        locks.mkdir(parents=True, exist_ok=True)
        return open(locks / name, "a+")  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise WriteFailed(f"cannot write {locks}: {exc.strerror or exc}") from None


@contextmanager
def edit_lockfile(path: Path) -> Iterator[Lockfile]:
    """Load, change and save under an exclusive lock, so two installs never lose an entry."""
    path = Path(path)
    with _guard(path, f"{path.name}.lock") as guard:
        if fcntl is not None:
            fcntl.flock(guard.fileno(), fcntl.LOCK_EX)
        sweep_temps(path.parent, path.name)  # killed writes' temps, an hour old
        lock = Lockfile.load(path)
        yield lock
        lock.save()


@contextmanager
def scope_lock(path: Path, waiting: Callable[[str], None] = lambda _: None) -> Iterator[None]:
    """Held by one install, update or remove of the scope whose lockfile is ``path``, from
    reading the lockfile to writing it, so two processes never leave the folder holding one
    version and the lockfile naming another. A second one calls ``waiting`` and waits.

    The lock is on the lockfile's folder itself, so a refused install leaves no file behind."""
    folder = Path(path).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise WriteFailed(f"cannot use {folder}: {exc.strerror or exc}") from None
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                waiting(f"waiting for another kiln skills command on {path} to finish")
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
