"""The names a skill archive's entries may have: UTF-8, relative, no ``..``, no control or
formatting characters, no component a file system would refuse or read as another file (over
255 bytes; on Windows a ``:``, a trailing dot, a device name), and no two that one file system
would store as one file (case, Unicode normalization) or as a file inside a file."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from pathlib import PurePosixPath

from skills_registry.registry.errors import ArchiveError

MAX_NAME_BYTES = 255  # one path component: NAME_MAX on Linux, macOS and Windows
# Names Windows maps to devices whatever the extension (``con.txt`` opens the console).
_WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{p}{i}" for p in ("com", "lpt") for i in range(1, 10)]
)


def _folded(path: str) -> str:
    """The key under which case-insensitive or normalizing file systems (macOS, Windows) store
    ``path``: two names with one key would land in one file there."""
    # upper() first: Windows compares names by their upper case, which makes the dotless `ı`
    # one letter with `i` (`I` for both), while casefold() keeps `ı` a letter of its own
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", path).upper().casefold())


def check_collisions(files: Mapping[str, bytes]) -> None:
    """No two paths may differ only by case or Unicode normalization (``SKILL.md`` vs
    ``Skill.md``, NFC vs NFD ``café``), folders included (``Scripts/a`` beside ``scripts/b``),
    and no file may sit where another file is a folder."""
    seen: dict[str, str] = {}
    for rel in sorted(files):
        other = seen.setdefault(_folded(rel), rel)
        if other != rel:
            raise ArchiveError(
                f"{clip(other)} and {clip(rel)} differ only by case or Unicode "
                "normalization (one file on macOS and Windows)"
            )
    folders: dict[str, str] = {}
    for rel in sorted(files):
        for parent in PurePosixPath(rel).parents:
            if str(parent) == ".":
                continue
            if _folded(str(parent)) in seen:
                raise ArchiveError(f"{clip(rel)} is both a file and inside a file")
            # `A/x` and `a/y` are two folders here and one on macOS and Windows, whose tree
            # then holds `A/y`: a tree that never verifies, and a review that showed two folders
            other = folders.setdefault(_folded(str(parent)), str(parent))
            if other != str(parent):
                raise ArchiveError(
                    f"folders {clip(other)} and {clip(str(parent))} differ only by case or "
                    "Unicode normalization (one folder on macOS and Windows)"
                )


def clip(name: str, limit: int = 80) -> str:
    """``repr(name)`` cut short, so an error about a 500-character name stays one short line."""
    shown = repr(name)
    return shown if len(shown) <= limit else shown[: limit - 2] + "…'"


def check_name(name: str) -> tuple[str, str]:
    """Split ``top/rest`` after refusing every name that could escape or confuse a folder."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ArchiveError(f"entry name {clip(name)} is not valid UTF-8") from None
    if not name or "\0" in name or "\\" in name or len(name) > 512:
        raise ArchiveError(f"entry name {clip(name)} is not allowed")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"absolute path {clip(name)} is not allowed")
    parts = [p for p in name.rstrip("/").split("/")]
    if any(p in ("", ".", "..") for p in parts):
        raise ArchiveError(f"path {clip(name)} has an empty, '.' or '..' component")
    long = next((p for p in parts if len(p.encode("utf-8")) > MAX_NAME_BYTES), None)
    if long is not None:
        raise ArchiveError(
            f"path component {long[:40]!r}… is {len(long.encode('utf-8'))} bytes; "
            f"file systems allow {MAX_NAME_BYTES}"
        )
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in name):
        # C0/C1 controls move a terminal's cursor; bidi overrides and zero-width characters
        # make ``scripts/\u202egnp.sh`` read as ``hs.png`` in a review.
        raise ArchiveError(f"entry name {clip(name)} has control or formatting characters")
    for part in parts:
        problem = _windows_problem(part)
        if problem:
            raise ArchiveError(f"path {clip(name)} {problem}")
    return parts[0], "/".join(parts[1:])


def _windows_problem(part: str) -> str:
    """Why ``part`` would not name the same file on Windows, or ``""``."""
    if ":" in part:
        return "has ':' (a drive or an alternate data stream on Windows)"
    if any(ch in '<>"|?*' for ch in part):
        return "has a character Windows does not allow in file names"
    if part[-1] in ". ":
        return "has a component ending in '.' or ' ' (Windows drops it: another file's name)"
    if part.split(".")[0].rstrip(" ").lower() in _WINDOWS_DEVICES:
        return "has a component Windows reserves for a device"
    return ""
