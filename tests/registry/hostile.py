"""Builders of hostile skill archives, shared by the archive, API and install tests."""

from __future__ import annotations

import functools
import gzip
import io
import tarfile
from collections.abc import Callable

SKILL_MD = b"---\nname: evil\ndescription: Looks harmless.\n---\n# Evil\n"


def _tar(add: Callable[[tarfile.TarFile], None], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(
        fileobj=raw, mode="w", format=fmt, encoding="utf-8", errors="surrogateescape"
    ) as tar:
        add(tar)
    return gzip.compress(raw.getvalue(), mtime=0)


def _file(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _special(tar: tarfile.TarFile, name: str, kind: bytes, linkname: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    tar.addfile(info)


def _with_skill(extra: Callable[[tarfile.TarFile], None], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    def add(tar: tarfile.TarFile) -> None:
        _file(tar, "evil/SKILL.md", SKILL_MD)
        extra(tar)

    return _tar(add, fmt)


def zip_slip() -> bytes:
    return _with_skill(lambda t: _file(t, "evil/../../escaped.txt", b"pwned"))


def absolute_path() -> bytes:
    return _with_skill(lambda t: _file(t, "/tmp/escaped.txt", b"pwned"))


def dotdot_top() -> bytes:
    return _with_skill(lambda t: _file(t, "../escaped.txt", b"pwned"))


def symlink() -> bytes:
    return _with_skill(lambda t: _special(t, "evil/passwd", tarfile.SYMTYPE, "/etc/passwd"))


def hardlink() -> bytes:
    return _with_skill(lambda t: _special(t, "evil/link", tarfile.LNKTYPE, "evil/SKILL.md"))


def device() -> bytes:
    return _with_skill(lambda t: _special(t, "evil/null", tarfile.CHRTYPE))


def fifo() -> bytes:
    return _with_skill(lambda t: _special(t, "evil/pipe", tarfile.FIFOTYPE))


@functools.cache
def many_files(count: int = 10_000) -> bytes:
    def add(tar: tarfile.TarFile) -> None:
        for i in range(count):
            _file(tar, f"evil/f{i}.txt", b"x")

    return _with_skill(add)


def declared_huge() -> bytes:
    """A header that declares 1 GB followed by a few real bytes."""
    info = tarfile.TarInfo("evil/huge.bin")
    info.size = 1 << 30
    raw = tarfile.TarInfo("evil/SKILL.md")
    raw.size = len(SKILL_MD)
    body = raw.tobuf() + SKILL_MD.ljust(512, b"\0") + info.tobuf() + b"tiny".ljust(512, b"\0")
    return gzip.compress(body, mtime=0)


@functools.cache
def gzip_bomb() -> bytes:
    """Tiny compressed, ~48 MB decompressed (each file under the per-file cap)."""
    chunk = b"\0" * (4 * 1024 * 1024)
    return _with_skill(lambda t: [_file(t, f"evil/zero{i}.bin", chunk) for i in range(12)])


def duplicate() -> bytes:
    return _with_skill(
        lambda t: _file(t, "evil/SKILL.md", b"---\nname: evil\ndescription: swapped\n---\n")
    )


def invalid_utf8() -> bytes:
    return _with_skill(lambda t: _file(t, "evil/\udcff\udcfe.txt", b"x"), fmt=tarfile.GNU_FORMAT)


def two_tops() -> bytes:
    return _with_skill(lambda t: _file(t, "other/file.txt", b"x"))


def not_gzip() -> bytes:
    return b"PK\x03\x04 this is a zip"


def truncated() -> bytes:
    return zip_slip()[:40]


# name -> (builder, words the error must contain)
CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    "zip-slip": (zip_slip, "'..'"),
    "absolute": (absolute_path, "absolute path"),
    "dotdot": (dotdot_top, "'..'"),
    "symlink": (symlink, "symlink"),
    "hardlink": (hardlink, "hardlink"),
    "device": (device, "device"),
    "fifo": (fifo, "fifo"),
    "10k-files": (many_files, "more than 1000 files"),
    "declared-1gb": (declared_huge, "declares 1073741824 bytes"),
    "gzip-bomb": (gzip_bomb, "decompression bomb"),
    "duplicate": (duplicate, "duplicate entry"),
    "invalid-utf8": (invalid_utf8, "not valid UTF-8"),
    "two-tops": (two_tops, "more than one top folder"),
    "not-gzip": (not_gzip, "not gzip"),
    "truncated": (truncated, "archive"),
}
