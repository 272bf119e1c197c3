"""``os.walk`` without recursion. On Python 3.11 ``os.walk`` recurses once per folder level, so
a checkout with a thousand nested folders (``a/a/a/…``, a 2 kB path git stores fine) raised
RecursionError in every tool and session start that walked it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from agent.workspace import opened_path


def walk(
    top: str | os.PathLike[str], onerror: Callable[[OSError], object] | None = None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """Top-down like ``os.walk(top, onerror=onerror)`` (links to folders are listed among the
    folders, never entered; the caller may prune ``dirnames`` in place), on a stack of its own.
    Each folder below ``top`` is opened without following a link and checked to lie under
    ``top`` once open: a process running meanwhile may have turned it, or a folder above it,
    into a link to ``~/.ssh`` after its parent was listed (then it is skipped)."""
    top = os.fspath(top)
    real_top = os.path.realpath(top)
    stack = [top]
    fd: int | None = None
    while stack:
        folder = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        links: set[str] = set()
        try:
            fd = _open_folder(folder, below=real_top if folder != top else None)
            with os.scandir(fd) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        dirs.append(entry.name)
                        if entry.is_symlink():
                            links.add(entry.name)
                    else:
                        files.append(entry.name)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        finally:
            if fd is not None:
                os.close(fd)
            fd = None
        yield folder, dirs, files
        stack.extend(os.path.join(folder, d) for d in reversed(dirs) if d not in links)


def _open_folder(folder: str, *, below: str | None) -> int:
    """A descriptor of ``folder``; with ``below``, not a link and inside ``below`` once open."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    fd = os.open(folder, flags | (os.O_NOFOLLOW if below is not None else 0))
    opened = opened_path(fd) if below is not None else None
    if (
        opened is not None
        and below is not None
        and not (opened == Path(below) or Path(below) in opened.parents)
    ):
        os.close(fd)
        raise OSError(0, f"{folder} led outside {below} when opened")
    return fd
