"""What one file holds when ``Index.update_file`` re-indexes it: an open buffer's text, or the
disk's bytes (a regular file only, read without blocking: ``reading``), read as a full run reads
them (``source_text``). A file over the size cap is indexed empty; a disk file left out for a
reason the user can act on (over the cap, a Git LFS pointer) says so in ``skipped``."""

from __future__ import annotations

import os
from pathlib import Path

from indexer.errors import PathOutsideRoot
from indexer.files import MAX_FILE_BYTES
from indexer.pipeline import opened_ok, skip_reason
from indexer.reading import read_regular
from indexer.source_text import as_indexed


def edit_source(
    root: Path, rel: str, full: Path, text: str | None, skipped: list[str] | None
) -> tuple[bytes, int, int] | None:
    """``(data, mtime_ns, size)`` of ``rel``, from ``text`` or else the disk; None when the disk
    holds no regular file there to read (gone, a folder, unreadable, a FIFO or a device)."""
    if text is None:
        try:  # a FIFO, a device, a file still growing: see indexer/reading.py
            st = full.stat()
            data = read_regular(  # a link swapped in since ``excluded``: see pipeline.opened_ok
                full, MAX_FILE_BYTES, inside=str(root), opened_ok=opened_ok(str(root), rel)
            )
        except OSError:
            return None
        mtime_ns, size = st.st_mtime_ns, st.st_size
    else:
        data = text.encode("utf-8", errors="replace")
        mtime_ns, size = -1, len(data)  # -1: the next scan re-checks the disk by hash
    if len(data) > MAX_FILE_BYTES:  # over the cap, on disk or in a buffer: recorded as skipped
        if text is None and skipped is not None:
            skipped.append(f"{rel}: larger than {MAX_FILE_BYTES:,} bytes ({size:,})")
        data = b""
    else:
        data = as_indexed(data)  # as a full run reads it: see indexer/source_text.py
    if data and text is None and skipped is not None and (why := skip_reason(rel, data)):
        skipped.append(f"{rel}: {why}")
    return data, mtime_ns, size


RESOLVE_TRIES = 8  # a name flipped between a link and a file while it is resolved: tried again


def workspace_path(root: Path, path: str | Path) -> tuple[str, Path]:
    """``path``'s repo-relative name and absolute path (not resolved), or ``PathOutsideRoot``
    when it lies or leads outside ``root``. A name replaced by a link, or a link by a file,
    while it is resolved makes ``realpath`` fail (``EINVAL`` from ``readlink``): that ended a
    one-file update in an ``OSError``, and the watcher dropped the rest of its batch."""
    p = Path(path)
    full = p if p.is_absolute() else root / p
    resolved = Path(os.path.abspath(full))
    try:
        rel = resolved.relative_to(root).as_posix()
    except ValueError:
        raise PathOutsideRoot(f"{path} is outside {root}") from None
    if rel in ("", ".") or rel.startswith("../"):
        raise PathOutsideRoot(f"{path} is outside {root}")
    for _ in range(RESOLVE_TRIES):
        try:
            real = resolved.resolve()
            break
        except OSError:
            continue
    else:
        raise PathOutsideRoot(f"{path} changed while it was resolved")
    try:  # a symlink inside the root may still point outside it
        real.relative_to(root)
    except ValueError:
        raise PathOutsideRoot(f"{path} resolves outside {root}") from None
    return rel, resolved
