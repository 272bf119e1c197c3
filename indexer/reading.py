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

import errno
import os
import stat
from collections.abc import Callable

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_FLAGS |= getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class NotRegular(OSError):
    """The path is a FIFO, a socket, a device or a folder: nothing the index reads."""


class LeftOut(NotRegular):
    """The file opened is not the one listed but one the index leaves out (a link to ``.env``
    or into ``.git`` swapped in since): left out without a word, as the listing leaves it."""


def read_regular(
    path: str | os.PathLike[str],
    limit: int,
    *,
    inside: str | None = None,
    nofollow: bool = False,
    opened_ok: Callable[[str], bool] | None = None,
) -> bytes:
    """The first ``limit + 1`` bytes at most of the regular file ``path``; with ``inside`` (a
    resolved folder), only if the file opened lies in it: a file replaced by a link to
    ``~/.ssh/id_rsa`` after the listing checked it is not read. The descriptor's own path is
    checked (``/proc/self/fd``), not the name again, so a second swap cannot slip between;
    ``opened_ok`` is asked about that path too (a link to ``.env``, or a folder on the way
    replaced by a link into ``.git``, leads inside the workspace to what the index leaves
    out). With ``nofollow`` (the name was no link when it was listed) a link at the name is
    not opened at all.

    Raises ``FileNotFoundError`` when it is gone, ``LeftOut`` when the file opened is one
    ``opened_ok`` refuses or the name became a link (``nofollow``), ``NotRegular`` when it is
    not a regular file or lies outside ``inside``, and ``OSError`` when it cannot be opened
    or read."""
    try:
        fd = os.open(path, _FLAGS | (_NOFOLLOW if nofollow else 0))
    except OSError as exc:
        if nofollow and exc.errno == errno.ELOOP:  # a link now: said as the listing says it
            raise _link_swapped_in(path, inside) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"not a regular file ({_kind(st.st_mode)})")
        if inside is not None or opened_ok is not None:
            real = _opened_path(fd, path)
            if inside is not None and not _within(real, inside):
                raise NotRegular("leads outside the workspace")
            if opened_ok is not None and not opened_ok(real):
                raise LeftOut("leads to a file the index leaves out")
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


def _link_swapped_in(path: str | os.PathLike[str], inside: str | None) -> NotRegular:
    """What to raise for a name that became a link since it was listed (nothing is read
    through it: where it leads only picks the line)."""
    try:
        outside = inside is not None and not _within(os.path.realpath(path), inside)
    except OSError:
        outside = False
    if outside:
        return NotRegular("leads outside the workspace")
    return LeftOut("replaced by a link since it was listed")


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
