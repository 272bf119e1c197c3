"""``os.walk`` without recursion. On Python 3.11 ``os.walk`` recurses once per folder level, so
a checkout with a thousand nested folders (``a/a/a/…``, a 2 kB path git stores fine) raised
RecursionError in every tool and session start that walked it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator


def walk(
    top: str | os.PathLike[str], onerror: Callable[[OSError], object] | None = None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """Top-down like ``os.walk(top, onerror=onerror)`` (links to folders are listed among the
    folders, never entered; the caller may prune ``dirnames`` in place), on a stack of its own."""
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        links: set[str] = set()
        try:
            with os.scandir(folder) as entries:
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
        yield folder, dirs, files
        stack.extend(os.path.join(folder, d) for d in reversed(dirs) if d not in links)
