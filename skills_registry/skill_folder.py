"""An installed skill's folder on disk: its scope, its name, its marker file, the guarded swap.

A project scope (``.kiln/skills`` and ``skills-lock.json``) comes with the repository, so a
link among its paths is refused before anything is read or written. A folder is named from a skill id already checked by ``parse_spec``, never from a path. The
marker file records which skill (and tree hash) a folder holds, so an install never clobbers
another skill or local edits without ``force``; the swap extracts next to the target and
swaps the two folders in one step (two renames where the system cannot), so the old tree
survives any failure and a kill leaves one whole version. The verified install that drives these is
``skills_registry.install``.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skills_registry import json_limits
from skills_registry.archive import (
    MARKER_FILE,
    ArchiveContents,
    ArchiveError,
    extract,
    tree_hash_dir,
    unhashed,
)
from skills_registry.client import kiln_home, parse_spec, printable
from skills_registry.lockfile import LOCK_NAME, LockEntry
from skills_registry.registry.errors import LocallyModified, UsageError, WriteFailed


@dataclass
class Scope:
    """Where skills go and which lockfile records them (project or user)."""

    skills_dir: Path
    lock_path: Path
    root: Path | None = None  # a project's folder: nothing may be written outside it

    @classmethod
    def project(cls, root: Path) -> Scope:
        return cls(Path(root) / ".kiln" / "skills", Path(root) / LOCK_NAME, Path(root))

    def check_inside(self) -> None:
        """A project's skills folder, lockfile and lock folder come with the repository, and a
        link among them (``.kiln/skills -> ~/.kiln/skills``) would make an install, even
        ``--frozen --ci``, write skill files or a lockfile outside the checkout."""
        if self.root is None:
            return
        root = self.root.resolve()
        kiln_dir = self.lock_path.parent / ".kiln"
        for path in (self.skills_dir, self.lock_path, kiln_dir, kiln_dir / "locks"):
            resolved = path.resolve()
            if resolved != root and root not in resolved.parents:
                raise UsageError(
                    f"{path} resolves outside the project ({resolved}); "
                    "refusing to install through a link",
                    hint="remove the link or install with --user",
                )

    @classmethod
    def user(cls) -> Scope:
        return cls(kiln_home() / "skills", kiln_home() / LOCK_NAME)


def folder_name(skill_id: str) -> str:
    """The install folder name, from an id already checked by ``parse_spec`` (never from a path)."""
    return parse_spec(skill_id)[0].partition("/")[2]


def read_marker(target: Path) -> dict[str, Any]:
    try:
        data = json_limits.loads((target / MARKER_FILE).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def place(contents: ArchiveContents, target: Path, marker: dict[str, Any]) -> None:
    """Extract next to the target, then swap with renames: the old tree survives any failure,
    a write the file system refuses included (one line, not a traceback)."""
    tmp = target.parent / f".tmp-{target.name}-{uuid.uuid4().hex[:8]}"
    old = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        sweep_scope(target.parent, target.name)
        extract(contents, tmp)
        text = json.dumps(marker, indent=2, sort_keys=True) + "\n"
        fd = os.open(tmp / MARKER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if target.is_dir() and not target.is_symlink() and _exchange(tmp, target):
            pass  # one step: ``tmp`` now holds the old tree, removed below
        elif target.exists() or target.is_symlink():
            old = target.parent / f".old-{target.name}-{uuid.uuid4().hex[:8]}"
            target.rename(old)
            tmp.rename(target)
        else:
            tmp.rename(target)
    except BaseException as exc:  # a refused write, or Ctrl-C / SIGTERM between the renames
        if old is not None and not target.exists():
            with contextlib.suppress(OSError):
                old.rename(target)  # put the previous tree back
        if isinstance(exc, OSError):
            raise WriteFailed(f"cannot write {target}: {exc.strerror or exc}") from None
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


_LIBC: Any = None  # the C library, loaded on the first swap (none at import)
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2
_UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV}


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (Linux ``renameat2`` with ``RENAME_EXCHANGE``), so a kill
    never falls between moving the old tree out and the new one in; False where the system or
    the file system has no such call (the caller then renames twice)."""
    global _LIBC
    if sys.platform != "linux":
        return False
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(None, use_errno=True)
        except OSError:
            return False
    call = getattr(_LIBC, "renameat2", None)
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), str(b))


def discard(target: Path, then: Callable[[], None] = lambda: None) -> None:
    """Delete an installed skill folder: first moved aside in one rename to a name discovery
    skips and every later skills command sweeps (``sweep_scope``), then ``then`` (the lockfile
    edit), then the files, so a kill never leaves it half deleted in place (its marker gone
    first, the rest would read as a local, first-party skill) nor a removed skill locked."""
    aside = target.parent / f".removed-{target.name}-{uuid.uuid4().hex[:8]}"
    try:
        target.rename(aside)
    except OSError as exc:
        raise WriteFailed(f"cannot remove {target}: {exc.strerror or exc}") from None
    then()
    shutil.rmtree(aside, ignore_errors=True)


LEFTOVER_SECONDS = 3600  # older than any install still running


_LEFTOVER = re.compile(r"\.(tmp|old|removed)-(.+)-[0-9a-f]{8}")


def sweep_scope(skills_dir: Path, name: str | None = None) -> None:
    """Remove what killed installs and removes left in a skills folder (of one skill's name, or
    all): a removed skill's folder at any age (nothing needs it back), temp and swapped-out
    folders (``.tmp-NAME-xxxxxxxx``, ``.old-NAME-xxxxxxxx``, hidden from discovery but up to
    32 MB each) once an hour old, since a young one may belong to an install running now."""
    now = time.time()
    try:
        entries = list(skills_dir.iterdir())
    except OSError:
        return  # no skills folder yet
    for entry in entries:
        match = _LEFTOVER.fullmatch(entry.name)
        if match is None or (name is not None and match.group(2) != name):
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        with contextlib.suppress(OSError):
            if match.group(1) == "removed" or now - entry.lstat().st_mtime > LEFTOVER_SECONDS:
                shutil.rmtree(entry)


def guard_target(target: Path, skill_id: str, locked: LockEntry | None, force: bool) -> str | None:
    """Refuse to clobber another skill or local edits; return the current tree hash if any."""
    if not target.exists() and not target.is_symlink():
        return None
    if target.is_symlink() or not target.is_dir():
        if force:
            return ""
        raise LocallyModified(f"{target} exists and is not an installed skill folder")
    marker = read_marker(target)
    if marker.get("id") != skill_id and not force:
        owner = marker.get("id") or "a local skill"
        raise LocallyModified(
            f"{target} holds {owner}, not {skill_id}", hint="remove it first or pass --force"
        )
    try:
        current = tree_hash_dir(target)
    except ArchiveError as exc:  # a link, a special or huge file: not what an install wrote
        if force:
            return ""
        raise LocallyModified(
            f"{skill_id} at {target} was modified locally ({exc})",
            hint="pass --force to replace it with the installed version",
        ) from None
    expected = locked.treeHash if locked else marker.get("treeHash")
    # Files that are exactly what their marker records were written by an install, even when
    # the lockfile says otherwise (a kill between the swap and the lockfile write).
    if expected and current not in (expected, marker.get("treeHash")) and not force:
        raise LocallyModified(f"{skill_id} at {target} was modified locally")
    # Build output beside the hashed files (a shipped ``__pycache__``) would run in the skill's
    # name: never "unchanged"; the caller writes the verified tree again, without it. Nor is a
    # folder whose marker is not this install's (lost, edited, of another id under --force):
    # `verify` fails on it, and the install it suggests must write the marker again.
    if marker.get("id") != skill_id or marker.get("treeHash") != current:
        return ""
    return "" if unhashed(target, limit=1) else current


def check_same_signer(
    target: Path, skill_id: str, locked: LockEntry | None, key_id: str, force: bool
) -> None:
    """An id names a skill on one registry: the same id signed with another key is another
    publisher's (another registry, not a mirror of this one), never put in place of the
    installed one, nor in its lock entry, without ``force``."""
    marker = {} if locked is not None or target.is_symlink() else read_marker(target)
    before = locked.keyId if locked is not None else marker.get("keyId")
    if force or not before or before == key_id:
        return
    source = locked.registry if locked is not None else marker.get("registry")
    raise LocallyModified(
        f"{skill_id} was installed from {source} (signed with {before}); this registry signs "
        f"with another signing key ({key_id}), so its {skill_id} is another publisher's",
        hint="remove the installed skill first, or pass --force to replace it",
    )


def unlocked_installs(skills_dir: Path, locked: set[str]) -> list[dict[str, Any]]:
    """``verify`` rows for folders an install wrote (their marker names an id) that the lockfile
    does not hold: an install killed after its swap and before the lockfile write leaves a
    whole, usable skill no lock entry pins. Rerunning the install records it."""
    rows: list[dict[str, Any]] = []
    try:
        folders = sorted(p for p in skills_dir.iterdir() if not p.name.startswith("."))
    except OSError:
        return rows
    for folder in folders:
        marker = read_marker(folder) if folder.is_dir() and not folder.is_symlink() else {}
        skill_id, version = marker.get("id"), marker.get("version")
        if not isinstance(skill_id, str) or skill_id in locked:
            continue
        skill_id, version = printable(skill_id, 200), printable(str(version or ""), 200)
        shown = f"{skill_id}@{version}" if version else skill_id
        rows.append(
            {
                "id": skill_id,
                "version": version,
                "ok": False,
                "problems": [
                    f"installed in {printable(str(folder))} but not in the lockfile (an install stopped before "
                    f"writing it); `kiln skills install {shown}` records it"
                ],
            }
        )
    return rows
