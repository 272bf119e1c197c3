"""Reading a file of a checkout that may be hostile: only a regular file, at most a bounded
number of bytes, and never a call that can block.

``open()`` of a FIFO waits for a writer forever, a link to ``/dev/zero`` or ``/dev/urandom``
never ends, and a file can be swapped for either between the listing and the read. The file
is opened with ``O_NONBLOCK`` (a FIFO opens at once; the flag means nothing to regular files),
checked to be a regular file on the descriptor itself (so what is read is what was checked),
and read up to ``limit + 1`` bytes: a caller sees from the length that the file is over its cap,
and a file that grows while it is read costs no more than that.
"""

from __future__ import annotations

import os
import stat

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_FLAGS |= getattr(os, "O_CLOEXEC", 0)


class NotRegular(OSError):
    """The path is a FIFO, a socket, a device or a folder: nothing the index reads."""


def read_regular(path: str | os.PathLike[str], limit: int, *, inside: str | None = None) -> bytes:
    """The first ``limit + 1`` bytes at most of the regular file ``path``; with ``inside`` (a
    resolved folder), only if the file opened lies in it: a file replaced by a link to
    ``~/.ssh/id_rsa`` after the listing checked it is not read. The descriptor's own path is
    checked (``/proc/self/fd``), not the name again, so a second swap cannot slip between.

    Raises ``FileNotFoundError`` when it is gone, ``NotRegular`` when it is not a regular
    file or lies outside ``inside``, and ``OSError`` when it cannot be opened or read."""
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"not a regular file ({_kind(st.st_mode)})")
        if inside is not None and not _within(_opened_path(fd, path), inside):
            raise NotRegular("leads outside the workspace")
        want = min(st.st_size, limit) + 1  # a read allocates what it asks for: ask for the size
        parts: list[bytes] = []
        while want > 0:
            part = os.read(fd, want)
            if not part:
                break
            parts.append(part)
            want -= len(part)
        return b"".join(parts)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "a special file"


def _opened_path(fd: int, path: str | os.PathLike[str]) -> str:
    """Where the open descriptor ``fd`` leads (Linux: its /proc link; elsewhere the name's
    resolved path, checked after the open)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


def _within(real: str, folder: str) -> bool:
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)
