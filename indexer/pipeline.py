"""The parse pipeline of a full run: read, hash, chunk and prepare rows per file, in forked
worker processes when there are many files, while the caller writes to SQLite.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import ProcessPoolExecutor
from itertools import islice
from pathlib import Path
from typing import Any

from indexer.chunker import chunk_file
from indexer.files import (
    BINARY,
    LFS,
    MAX_FILE_BYTES,
    MINIFIED,
    Candidate,
    excluded,
    looks_indexable,
    unindexable,
)
from indexer.languages import language_for, language_of
from indexer.reading import LeftOut, read_regular
from indexer.rows import Prepared, prepare
from indexer.source_text import as_indexed

POOL_MIN_FILES = 48  # below this, parsing in-process beats starting workers
POOL_WORKERS = 2
BATCH_BYTES = 1 << 18  # source bytes per round trip to a worker ...
BATCH_FILES = 32  # ... or this many files
# Batches submitted ahead of the one being written (~12 MB of source): enough that the workers
# go on parsing while the writer records the history (SQLAlchemy's 15,426 commits: ~1 CPU-s in
# one transaction); with 16, both workers sat idle for most of it.
IN_FLIGHT = 24 * POOL_WORKERS
RESULT_PIPE_BYTES = 1 << 20  # the results pipe's buffer (Linux; the default is 64 kB)
LFS_SKIP = "a Git LFS pointer, not its content (run git lfs pull)"
PARENT_POLL_SECONDS = 1.0  # how often a worker checks that its parent is still there
WORKER_GC_THRESHOLD = (20000, 20, 20)  # a parse worker's ``gc.set_threshold`` (default 700, 10, 10)


def digest(data: bytes) -> str:
    """A file's content hash, 128 bits (hex). SHA-256 rather than BLAKE2: current CPUs hash it
    in hardware (2.5x faster here: 0.17 against 0.42 ms for a 300 kB module, hashed on every
    edit). A hash stored by the BLAKE2 version just reads as a change: that file is parsed
    once more."""
    return hashlib.sha256(data).hexdigest()[:32]


def _prepare(
    rel: str, path: str, known_hash: str | None, root: str | None = None
) -> tuple[str, str, Prepared | None, int, str]:
    """Read, hash and chunk one file (runs in a worker process for big runs).

    Returns (rel, status, blocks, size, hash); status is ``indexed``, ``same``, ``skip``,
    ``skip: <why, for the user>`` or ``gone``/``error: ...``.
    """
    try:  # never blocks on a FIFO swapped in since the listing; reads MAX_FILE_BYTES + 1 at most
        data = read_regular(  # ... nor through a link swapped in (at the name or a folder)
            path,
            MAX_FILE_BYTES,
            inside=root,
            nofollow=root is not None and path == os.path.join(root, rel),  # listed as no link
            opened_ok=None if root is None else opened_ok(root, rel),
        )
    except (FileNotFoundError, LeftOut):  # left out as the listing leaves such a link out
        return rel, "gone", None, 0, ""
    except OSError as exc:
        return rel, f"error: {exc.strerror or exc}", None, 0, ""
    size = len(data)  # of the disk's bytes: the next run compares it with the file's
    if size <= MAX_FILE_BYTES:
        data = as_indexed(data)  # UTF-8 with LSP's lines (a lone \r, a UTF-16 file)
    h = digest(data)
    if h == known_hash:
        return rel, "same", None, size, h
    if size > MAX_FILE_BYTES or not looks_indexable(data):
        why = skip_reason(rel, data)  # said once: recorded as skipped until it changes
        return rel, f"skip: {why}" if why else "skip", None, size, h
    language = language_of(rel, data)  # once: the blocks' grammar and the file's row
    prepared = prepare(rel, chunk_file(rel, data, language), language=language)
    return rel, "indexed", prepared, size, h


def opened_ok(root: str, rel: str) -> Callable[[str], bool]:
    """Whether a file opened for ``rel`` (by its real path) may be read: the file at ``rel``
    itself, or one the listing indexes by its own name (``rel`` is a link inside the root to
    it). A file replaced by a link to ``.env``, or under a folder replaced by a link into
    ``.git``, between the listing and the read had the user's secrets indexed under its name."""
    own = os.path.join(root, rel)

    def ok(real: str) -> bool:
        if real == own:
            return True
        try:
            target = Path(real).relative_to(root).as_posix()
        except ValueError:
            return False
        return target not in ("", ".") and not excluded(Path(root), target)

    return ok


def skip_reason(rel: str, data: bytes) -> str:
    """Why a file left out deserves a line: an LFS pointer, or a file of a source language
    (a .py, a .js) that is binary or minified, which a search will miss; "" for the
    skips expected without a word (generated files, binary or minified data)."""
    why = unindexable(data[: MAX_FILE_BYTES + 1])
    if why == LFS:
        return LFS_SKIP
    return why if why in (BINARY, MINIFIED) and language_for(rel) != "text" else ""


def _prepare_many(args: list[tuple[str, str, str | None, str | None]]) -> list[tuple]:
    return [_prepare(*a) for a in args]


def _batches(
    args: list[tuple[str, str, str | None, str | None]], sizes: list[int]
) -> Iterator[list]:
    """Consecutive runs of files of about ``BATCH_BYTES`` (at most ``BATCH_FILES``): one
    round trip per run keeps the pickling and queue overhead per file small."""
    batch: list[tuple[str, str, str | None, str | None]] = []
    held = 0
    for a, size in zip(args, sizes, strict=True):
        batch.append(a)
        held += size
        if held >= BATCH_BYTES or len(batch) >= BATCH_FILES:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def prepared(
    work: list[Candidate], hashes: dict[str, str], root: str | None = None
) -> Generator[tuple, None, None]:
    """Prepared rows for each file of ``work``, in order: in-process for a few files, in two
    forked workers for a full run (parsing is the CPU-bound part; the caller writes while
    they parse). With ``root``, a file whose opened descriptor leads outside it is not read
    (replaced by a link since the listing: ``reading.read_regular``). At most ``IN_FLIGHT`` batches are submitted ahead of the one the caller
    reads, so a writer slower than the workers holds a bounded amount of rows in memory."""
    args = [(c.rel, c.where, hashes.get(c.rel), root) for c in work]
    ctx = _fork_context() if len(work) >= POOL_MIN_FILES else None
    if ctx is None:
        for a in args:
            yield _prepare(*a)
        return
    batches = _batches(args, [c.size for c in work])
    with ProcessPoolExecutor(
        POOL_WORKERS, mp_context=ctx, initializer=_after_fork, initargs=(os.getpid(),)
    ) as pool:
        _widen_results_pipe(pool)
        try:
            ahead = deque(pool.submit(_prepare_many, b) for b in islice(batches, IN_FLIGHT))
            while ahead:
                done = ahead.popleft().result()
                for b in islice(batches, 1):
                    ahead.append(pool.submit(_prepare_many, b))
                yield from done
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _widen_results_pipe(pool: ProcessPoolExecutor) -> None:
    """Give the pipe the workers send results through a buffer that holds a whole batch's.

    With the default 64 kB a worker's send of a batch (~0.5 MB pickled) blocks until the
    parent's reading thread has drained the pipe eight times over, and that thread waits for
    the GIL the writing thread holds: each worker spent 1.4-2.1 s sending over SQLAlchemy at load 8
    (``bench/README.md``, "Throughput, fourth pass"). The pipe is the executor's own (its
    ``_result_queue``, made in its constructor, before any worker is forked); where it has
    another shape, or the system refuses the size, the default stays."""
    if not sys.platform.startswith("linux"):
        return
    reader = getattr(getattr(pool, "_result_queue", None), "_reader", None)
    if reader is None:
        return
    try:
        import fcntl

        fcntl.fcntl(reader.fileno(), fcntl.F_SETPIPE_SZ, RESULT_PIPE_BYTES)
    except (AttributeError, OSError, ValueError):
        pass


def _fork_context() -> Any:
    """A fork context for the parse workers, or None to parse in-process.

    Only fork: spawn would re-import ``__main__``, and ``python -m lsp_server`` runs the CLI at
    import. Forking a multi-threaded process (the language server) is safe here because the
    children only read files and parse (``_after_fork`` renews the locks they take); Python
    3.12+ warns about it, so there a multi-threaded caller parses in-process instead.
    """
    import multiprocessing

    if (os.cpu_count() or 1) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    if threading.active_count() > 1 and sys.version_info >= (3, 12):
        return None
    return multiprocessing.get_context("fork")


def _after_fork(parent: int) -> None:
    """Worker initializer: locks copied from a busy parent may be held by a thread that does
    not exist in the child, so the child gets fresh ones; and the worker ends with its parent
    (a host killed hard must not leave parse workers behind). ``parent`` is the pid read
    before the fork: read in the child, it would already be init's if the parent was killed
    between the fork and this call, and the worker would never notice.

    The garbage collector leaves the objects inherited from the parent out of its walks
    (``gc.freeze``: walking them finds nothing to collect and copies their pages) and runs
    less often: a worker's garbage is freed by reference counts, and collecting every 700
    new objects cost 3-4 % of its CPU (``bench/worker_gc.py``)."""
    import gc

    from indexer import filelist, languages, tokens

    gc.freeze()
    gc.set_threshold(*WORKER_GC_THRESHOLD)

    filelist._met_lock = threading.Lock()
    languages._lock = threading.Lock()
    tokens._stem_lock = threading.Lock()
    tokens.camel_lock = threading.Lock()
    _die_with_parent(parent)


def _die_with_parent(parent: int) -> None:
    """Exit when ``parent`` goes away: at once on Linux (PR_SET_PDEATHSIG), and elsewhere, or
    if the parent died before that was set, when the worker finds it has a new parent."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="kiln-parent-watch", daemon=True).start()
