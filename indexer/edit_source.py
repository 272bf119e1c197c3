"""What one file holds when ``Index.update_file`` re-indexes it: an open buffer's text, or the
disk's bytes (a regular file only, read without blocking: ``reading``), read as a full run reads
them (``source_text``). A file over the size cap is indexed empty; a disk file left out for a
reason the user can act on (over the cap, a Git LFS pointer) says so in ``skipped``."""

from __future__ import annotations

from pathlib import Path

from indexer.files import MAX_FILE_BYTES
from indexer.pipeline import skip_reason
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
            data = read_regular(full, MAX_FILE_BYTES, inside=str(root))
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
