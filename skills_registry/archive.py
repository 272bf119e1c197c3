"""Skill archives: deterministic build, capped streaming read, safe extraction, tree hash.

An archive is a tar.gz with exactly one top folder ``<name>/``. Reading never touches the disk:
the stream is decompressed under a byte cap (a gzip bomb stops at the cap, not at the end), and
every entry is checked before its bytes are kept — only regular files and folders, UTF-8 names,
no absolute paths, no ``..``, no duplicates. Extraction writes the vetted files into a fresh
folder, so a hostile archive can never write outside it. The tree hash is independent of tar
details (order, mtimes, owners), which lets a client check an installed folder against the lock.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from skills_registry.archive_names import check_collisions, check_name, clip
from skills_registry.registry.errors import ArchiveError

MAX_ARCHIVE_BYTES = 8 * 1024 * 1024  # compressed, as uploaded
MAX_UNPACKED_BYTES = 32 * 1024 * 1024  # the files' bytes in all
# What the decompressed tar stream may add to the files' bytes, per entry (files and folders,
# at most ``2 * MAX_FILES``): a header block, a long-name PAX record and padding. The stream cap
# is the files' limit plus this, so a skill at the limit is read and a gzip bomb still stops.
TAR_OVERHEAD_PER_ENTRY = 4096
TAR_RECORD = 20 * 512  # the end marker, padded to a record
MAX_FILES = 1000
MAX_FILE_BYTES = 8 * 1024 * 1024
MARKER_FILE = ".kiln-install.json"
# Never packed (and refused in an uploaded archive): build junk and our own install marker.
# An installed tree is hashed without them, so an archive holding them could never verify.
SKIP_NAMES = frozenset({".git", "__pycache__", ".DS_Store", MARKER_FILE, ".venv", "node_modules"})


@dataclass
class ArchiveContents:
    """The vetted files of an archive: relative POSIX path (without the top folder) -> bytes."""

    top: str
    files: dict[str, bytes]
    executables: set[str] = field(default_factory=set)

    @property
    def size(self) -> int:
        return sum(len(b) for b in self.files.values())


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_hash(files: Mapping[str, bytes]) -> str:
    """sha256 over sorted ``path NUL sha256(bytes) LF`` lines: stable across tar/zip details."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode("utf-8") + b"\0" + sha256_hex(files[path]).encode() + b"\n")
    return digest.hexdigest()


def read_dir(root: Path) -> ArchiveContents:
    """Collect a skill folder's files the way ``build_archive`` packs them (symlinks refused)."""
    root = Path(root)
    if not root.is_dir():
        raise ArchiveError(
            f"{root} is not a folder", hint="pass the skill folder that holds SKILL.md"
        )
    files: dict[str, bytes] = {}
    executables: set[str] = set()
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_NAMES)
        for name in sorted(filenames):
            if name in SKIP_NAMES:
                continue
            full = Path(dirpath) / name
            info = full.lstat()
            rel = full.relative_to(root).as_posix()
            if not stat.S_ISREG(info.st_mode):
                raise ArchiveError(
                    f"{rel}: only regular files can be packed (symlink or special file)"
                )
            # Sizes and counts before any byte is read: a sparse file of 40 GB takes no room on
            # disk and a command can make one in a project's skill folder.
            total += info.st_size
            if info.st_size > MAX_FILE_BYTES:
                raise ArchiveError(f"{rel} is {info.st_size} bytes; the limit is {MAX_FILE_BYTES}")
            _check_totals(len(files) + 1, total)
            with full.open("rb") as handle:
                files[rel] = handle.read(MAX_FILE_BYTES + 1)
            if len(files[rel]) > MAX_FILE_BYTES:  # it grew since
                raise ArchiveError(f"{rel} is over {MAX_FILE_BYTES} bytes")
            if info.st_mode & 0o111:
                executables.add(rel)
        for d in dirnames:
            if (Path(dirpath) / d).is_symlink():
                raise ArchiveError(
                    f"{(Path(dirpath) / d).relative_to(root)}: symlinked folders cannot be packed"
                )
    _check_totals(len(files), sum(len(b) for b in files.values()))
    return ArchiveContents(root.name, files, executables)


def tree_hash_dir(root: Path) -> str:
    return tree_hash(read_dir(root).files)


def unhashed(root: Path, limit: int = 5) -> list[str]:
    """Up to ``limit`` files under ``root`` that the tree hash skips (build output such as
    ``__pycache__/`` or ``node_modules/``; the top-level install marker aside). They run:
    Python imports a matching ``.pyc`` in place of its source, Node looks in ``node_modules``
    first, so a verified skill must not carry any that the signed tree did not."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        inside = any(part in SKIP_NAMES for part in rel_dir.parts)
        dirnames.sort()
        for name in sorted(filenames):
            rel = (rel_dir / name).as_posix()
            if (inside or name in SKIP_NAMES) and rel != MARKER_FILE:
                found.append(rel)
                if len(found) >= limit:
                    return found
    return found


def build_archive(contents: ArchiveContents) -> bytes:
    """A byte-for-byte reproducible tar.gz: sorted entries, zero mtimes and owners."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        seen_dirs: set[str] = set()
        for rel in sorted(contents.files):
            parts = PurePosixPath(rel).parts
            for i in range(1, len(parts)):
                folder = "/".join(parts[:i])
                if folder not in seen_dirs:
                    seen_dirs.add(folder)
                    tar.addfile(_info(f"{contents.top}/{folder}", 0, tarfile.DIRTYPE, 0o755))
            data = contents.files[rel]
            mode = 0o755 if rel in contents.executables else 0o644
            tar.addfile(
                _info(f"{contents.top}/{rel}", len(data), tarfile.REGTYPE, mode), io.BytesIO(data)
            )
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def _info(name: str, size: int, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.type, info.mode, info.mtime = size, kind, mode, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


class _CappedGunzip(io.RawIOBase):
    """Decompresses lazily and fails as soon as the output passes ``cap`` bytes."""

    def __init__(self, data: bytes, cap: int) -> None:
        self._src = io.BytesIO(data)
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._buffer = b""
        self._total = 0
        self._cap = cap

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._buffer:
            if self._inflate.eof:
                if self._inflate.unused_data.strip(b"\0") or self._src.read(1).strip(b"\0"):
                    raise ArchiveError("archive holds trailing data after the gzip stream")
                return 0
            pending = self._inflate.unconsumed_tail or self._src.read(64 * 1024)
            if not pending:
                raise ArchiveError("archive is truncated")
            try:
                self._buffer = self._inflate.decompress(pending, 256 * 1024)
            except zlib.error as exc:
                raise ArchiveError(f"archive is not valid gzip ({exc})") from None
            self._total += len(self._buffer)
            if self._total > self._cap:
                raise ArchiveError(f"archive expands past {self._cap} bytes (decompression bomb?)")
        n = min(len(b), len(self._buffer))
        b[:n] = self._buffer[:n]
        self._buffer = self._buffer[n:]
        return n


def read_archive(
    data: bytes,
    *,
    max_bytes: int = MAX_ARCHIVE_BYTES,
    max_unpacked: int = MAX_UNPACKED_BYTES,
    max_files: int = MAX_FILES,
) -> ArchiveContents:
    """Vet and load a skill archive entirely in memory; raise ``ArchiveError`` on anything odd."""
    if len(data) > max_bytes:
        raise ArchiveError(f"archive is {len(data)} bytes; the limit is {max_bytes}")
    if data[:2] != b"\x1f\x8b":
        raise ArchiveError("archive is not gzip-compressed (expected a .tar.gz)")
    cap = max_unpacked + 2 * max_files * TAR_OVERHEAD_PER_ENTRY + TAR_RECORD
    stream = io.BufferedReader(_CappedGunzip(data, cap), buffer_size=64 * 1024)
    files: dict[str, bytes] = {}
    executables: set[str] = set()
    folders: set[str] = set()
    top: str | None = None
    entries = 0
    declared = 0  # bytes the kept entries will take in memory, checked before reading them
    try:
        with tarfile.open(
            fileobj=stream, mode="r|", encoding="utf-8", errors="surrogateescape"
        ) as tar:
            for member in tar:
                entries += 1
                if entries > max_files * 2:
                    raise ArchiveError(f"archive has more than {max_files} files")
                rel_top, rel = check_name(member.name)
                if top is None:
                    top = rel_top
                elif rel_top != top:
                    raise ArchiveError(
                        f"archive has more than one top folder ({top!r}, {rel_top!r})"
                    )
                if member.isdir():
                    if rel in files:
                        raise ArchiveError(f"duplicate entry {member.name!r}")
                    folders.add(rel)
                    continue
                if member.sparse is not None or member.type == tarfile.GNUTYPE_SPARSE:
                    # tarfile counts these as regular files, but a few bytes in the stream
                    # declare megabytes of holes that reading fills in: past the stream cap.
                    raise ArchiveError(f"{clip(member.name)}: sparse entries are not allowed")
                if not member.isreg():
                    raise ArchiveError(
                        f"{clip(member.name)}: {_kind(member)} entries are not allowed"
                    )
                if rel == "":
                    raise ArchiveError(f"{member.name!r}: the top entry must be a folder")
                if member.name.endswith("/"):  # GNU tar makes it a folder and skips its bytes
                    raise ArchiveError(f"{clip(member.name)}: a file's name ends in '/'")
                if rel in files or rel in folders:
                    raise ArchiveError(f"duplicate entry {member.name!r}")
                if member.size > MAX_FILE_BYTES:
                    raise ArchiveError(
                        f"{member.name!r} declares {member.size} bytes; the limit is {MAX_FILE_BYTES}"
                    )
                if len(files) >= max_files:
                    raise ArchiveError(f"archive has more than {max_files} files")
                declared += member.size
                if declared > max_unpacked:
                    raise ArchiveError(
                        f"archive's files declare more than {max_unpacked} bytes in all "
                        "(decompression bomb?)"
                    )
                handle = tar.extractfile(member)
                assert handle is not None
                files[rel] = handle.read()
                if member.mode & 0o111:
                    executables.add(rel)
        _drain_after_end(stream)
    except tarfile.TarError as exc:
        raise ArchiveError(f"archive is not a valid tar ({exc})") from None
    except (EOFError, zlib.error, OSError) as exc:
        raise ArchiveError(f"archive is corrupt ({exc})") from None
    if top is None or not files:
        raise ArchiveError("archive is empty")
    check_collisions(files)
    _check_totals(len(files), sum(len(b) for b in files.values()), max_files)
    return ArchiveContents(top, files, executables)


def _drain_after_end(stream: io.BufferedIOBase) -> None:
    """Read past the tar end marker to the end of the gzip data: only zero padding may follow.

    tarfile stops at the end-of-archive blocks, so without this a second gzip member or bytes
    after the marker (which other tar readers may extract) would pass unseen; reading on lets
    ``_CappedGunzip`` refuse trailing members and keeps the decompression cap in force.
    """
    while chunk := stream.read(64 * 1024):
        if chunk.strip(b"\0"):
            raise ArchiveError("archive holds data after the end of the tar stream")


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hardlink"
    if member.isfifo():
        return "fifo"
    if member.isdev():
        return "device"
    return "special"


def _check_totals(count: int, size: int, max_files: int = MAX_FILES) -> None:
    if count > max_files:
        raise ArchiveError(f"skill has {count} files; the limit is {max_files}")
    if size > MAX_UNPACKED_BYTES:
        raise ArchiveError(f"skill is {size} bytes unpacked; the limit is {MAX_UNPACKED_BYTES}")


def extract(contents: ArchiveContents, dest: Path) -> Path:
    """Write vetted contents into ``dest`` (created, must not exist); return ``dest``.

    Each path is resolved and checked to stay inside ``dest`` even though names were vetted:
    defence in depth costs one ``resolve`` per file.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=False)
    root = dest.resolve()
    folders = {root}
    for rel, data in sorted(contents.files.items()):
        target = (root / rel).resolve()
        if root not in target.parents:
            raise ArchiveError(f"{rel!r} would be written outside the install folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        folders.update(p for p in target.parents if root in p.parents)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        mode = 0o755 if rel in contents.executables else 0o644
        fd = os.open(target, flags, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    for folder in folders:  # mkdir takes its mode from the umask: 0 would make them 0777
        os.chmod(folder, 0o755)
    return dest
