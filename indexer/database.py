"""The connections to one index file: a writer shared under a lock, and a reader per thread.

SQLite in WAL mode lets readers run beside a writer, so searches never wait for an indexing
run. Writes go through one connection, one transaction at a time (``transaction``); a search
may borrow that connection when no write holds it (``idle_writer``: its page cache survives the
index's own commits, a reader's does not). A file that SQLite finds damaged is set aside
(``index.db.corrupt``) and an empty one takes its place (``rebuild``); the next update refills
it. This module owns the connections; what is written through them is ``Index``'s business.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from indexer import made_here, schema
from indexer.db_location import keep_out_of_git, refuse_links
from indexer.errors import (
    BadSetting,
    IndexFromNewerKiln,
    IndexLocked,
    IndexUnavailable,
    IndexUntrusted,
)
from indexer.schema_check import strange_objects
from indexer.wal_pairing import (
    Identity,
    InPlace,
    forget,
    identity,
    next_generation,
    note,
    opening,
    remove_stale,
    set_aside_unvouched,
    sweep,
)
from kiln_errors.setting import number_in
from kiln_errors.sqlite_common import is_corrupt

# The tables and columns every run reads (``schema`` makes them): a file whose migrations
# record is complete but whose tables lack one of them was not written by this kiln. Plain
# tables only: a statement is prepared, never run, so no page is read (the full-text tables
# would be constructed, reading their pages: damage there shows on the first search instead).
SHAPE = {
    "meta": ("key", "value"),
    "files": ("id", "path", "language", "mtime_ns", "size", "hash", "blocks", "generated"),
    "block_rows": (
        "id", "file_id", "path", "language", "kind", "name", "signature", "docstring", "hash",
        "text", "refs", "fts_path", "fts_name", "idents",
    ),
    "block_lines": ("id", "start_line", "end_line"),
    "blocks": ("id", "file_id", "start_line", "end_line"),
    "defs": ("name", "block_id", "file_id"),
    "refs": ("name", "block_id", "file_id"),
    "commits": ("id", "sha", "time", "message", "files"),
    "commit_files": ("commit_id", "path"),
    "files_stale": ("file_id",),
}  # fmt: skip


DEFAULT_BUSY_TIMEOUT = 5.0  # seconds a writer waits for another writer (KILN_INDEX_BUSY_TIMEOUT)
MAX_BUSY_TIMEOUT = 86_400.0  # a day: a writer that waits longer waits on a stuck one


def busy_timeout_setting() -> float:
    """``KILN_INDEX_BUSY_TIMEOUT`` (seconds, from 0 to a day), else the default."""
    raw = os.environ.get("KILN_INDEX_BUSY_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_BUSY_TIMEOUT
    value = number_in(raw, 0, MAX_BUSY_TIMEOUT)
    if value is None:
        raise BadSetting(
            f"KILN_INDEX_BUSY_TIMEOUT={raw[:40]!r} is not a number of seconds from 0 to "
            f"{MAX_BUSY_TIMEOUT:,g}",
            hint=f"unset it (default {DEFAULT_BUSY_TIMEOUT:g}) or set e.g. 30",
        )
    return value


class Database:
    """The writer and readers of ``db_path`` (created, migrated or rebuilt on open)."""

    def __init__(
        self,
        db_path: Path,
        busy_timeout: float,
        *,
        read_only: bool = False,
        on_swap: Callable[[], None] | None = None,
    ) -> None:
        self.path = db_path
        self.on_swap = on_swap  # told, under the lock, when ``follow_swap`` reopened
        self.read_only = read_only  # an index on a read-only disk: searched, never written
        self.busy_timeout = busy_timeout
        self.recovered: str | None = None  # set when a corrupt file was rebuilt
        self.lock = threading.RLock()  # held by every write on ``writer``
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()  # not the write lock: a search never waits on it
        self._generation = 0  # bumped by rebuild(): readers opened before it reconnect
        self._checkpoint_pages = 0  # the writer's wal_autocheckpoint, once set here
        self._identity: Identity | None = None  # the file the connections opened (follow_swap)
        self._in_place = InPlace()  # ... and its header id, for a file copied over it
        if read_only:
            self.writer = self._open_read_only()
            return
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexUnavailable(f"cannot create {db_path.parent}: {exc.strerror}") from exc
        keep_out_of_git(db_path.parent)
        sweep(db_path)  # the notes killed processes left half-made
        self.writer = self._open()

    def _open_read_only(self) -> sqlite3.Connection:
        """The file as it is, if this kiln wrote it in its current shape (nothing is migrated
        or set aside: nothing can be written)."""
        if not self.path.is_file():
            raise IndexUnavailable(f"{self.path} does not exist and cannot be created")
        conn = schema.connect_read_only(self.path)
        try:
            _trust(conn)
            if not schema.current(conn):
                raise IndexUnavailable(f"{self.path} was written by another kiln version")
            for table, columns in SHAPE.items():
                conn.execute(f"SELECT {', '.join(columns)} FROM {table} LIMIT 0")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise IndexUnavailable(f"cannot read {self.path}: {exc}") from exc
        except IndexUntrusted as exc:  # nothing can set it aside here: not searched at all
            conn.close()
            raise IndexUnavailable(f"{self.path} was {exc}; it is not searched") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            return schema.connect_read_only(self.path)
        return schema.connect(self.path, self.busy_timeout)

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect_checked()
        except (IndexFromNewerKiln, IndexUntrusted) as exc:  # not written by this Kiln
            self.recovered = (
                f"{self.path} was {exc}; set it aside as index.db.corrupt and rebuilt it"
            )
            self._move_aside()
            return self._connect_checked()
        except sqlite3.DatabaseError as exc:
            if is_locked(exc):
                raise IndexLocked(f"{self.path} is locked") from exc
            if is_foreign(exc):  # a file of another schema: set aside like a damaged one
                self.recovered = (
                    f"{self.path} is not an index this kiln can read ({exc});"
                    " set it aside as index.db.corrupt and rebuilt it from scratch"
                )
            elif is_corrupt(exc):
                self.recovered = f"{self.path} was unreadable ({exc}); rebuilt it from scratch"
            else:
                raise IndexUnavailable(f"cannot open {self.path}: {exc}") from exc
            self._move_aside()
            return self._connect_checked()

    def _connect_checked(self) -> sqlite3.Connection:
        with opening(self.path):  # from the -wal check to the note, one Kiln opener at a time
            return self._connect_opening()

    def _connect_opening(self) -> sqlite3.Connection:
        try:
            stale = remove_stale(self.path) or set_aside_unvouched(self.path)
        except OSError as exc:
            raise IndexUnavailable(f"cannot set {self.path}-wal aside: {exc.strerror}") from exc
        if stale is not None:
            self.recovered = self.recovered or stale
        _check_before_writing(self.path, self.busy_timeout)
        conn = schema.connect(self.path, self.busy_timeout)
        try:
            schema.migrate(conn, made_here.write)  # a new file gets this account's mark
            for table, columns in SHAPE.items():  # a file whose migrations record says "done"
                conn.execute(f"SELECT {', '.join(columns)} FROM {table} LIMIT 0")  # on tables
            conn.execute("SELECT count(*) FROM files").fetchone()  # of another shape: see SHAPE
            generation = next_generation(conn)  # this open, counted in the header
        except BaseException:
            conn.close()
            raise
        note(self.path)
        self._identity = identity(self.path)
        self._follow_id(conn, generation)
        return conn

    def _follow_id(self, conn: sqlite3.Connection, generation: int) -> None:
        """Follow the file's header id and generation (``InPlace``), once on the disk: a new
        file's are in the ``-wal`` until a checkpoint."""
        (expected,) = conn.execute("PRAGMA application_id").fetchone()
        self._in_place.start(self.path, expected, generation)
        if expected and not self._in_place.armed:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self._in_place.replaced()  # arms it

    def follow_swap(self) -> bool:
        """Reopen every connection when the file at ``path`` is no longer the one they opened
        (another process rebuilt the index, a file was copied or moved over it, it was
        deleted): before, a thread's first search opened the new file while the writer and
        the other threads kept the old one, and the edits of an editor went where no search
        saw them. True when it reopened."""
        if self.read_only or (
            identity(self.path) == self._identity and not self._in_place.replaced()
        ):
            return False
        with self.lock:
            moved = identity(self.path) != self._identity
            if not moved and not self._in_place.replaced():  # another thread reopened
                return False
            if moved:
                # The writer only: a thread may be reading on its own connection; each closes
                # its own at its next ``reader`` call. (SQLite neither checkpoints nor deletes
                # a moved file's -wal on close.)
                self.writer.close()
            else:  # copied over in place: see ``_set_aside_in_place``
                self._set_aside_in_place()
            self._in_place.stop()
            self._generation += 1
            self._checkpoint_pages = 0
            refuse_links(self.path.parent.parent, self.path)  # what came in may be a link
            try:  # the index folder again, never the workspace: one deleted stays deleted
                self.path.parent.mkdir(exist_ok=True)
            except OSError as exc:
                raise IndexUnavailable(
                    f"cannot create {self.path.parent}: {exc.strerror or exc}"
                ) from exc
            keep_out_of_git(self.path.parent)
            self.writer = self._open()
            if self.on_swap is not None:
                self.on_swap()
        return True

    def _set_aside_in_place(self) -> None:
        """A file copied over the index in place cannot be opened as it is: SQLite shares one
        record of the file per inode among a process's connections, and the last one closed
        checkpoints the ``-wal`` of the file before into it, mixing their pages. So every
        connection is closed, the file (whatever the checkpoint made of it) set aside as
        ``index.db.corrupt``, and an empty index made (the next update, or the watcher at
        once, fills it)."""
        self._close_all()
        try:
            self._move_aside()
        except OSError as exc:
            raise IndexUnavailable(f"cannot set {self.path} aside: {exc.strerror}") from exc
        self.recovered = (
            f"{self.path} was overwritten in place by another file; set it aside as"
            " index.db.corrupt and rebuilt it"
        )

    def _move_aside(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():  # never into a folder of that name (``refuse_links``)
                os.replace(src, self.path.with_name("index.db.corrupt" + suffix))

    def reader(self) -> sqlite3.Connection:
        """This thread's own connection (opened on first use, and again after a rebuild or a
        swap of the file: ``follow_swap``)."""
        self.follow_swap()
        held = getattr(self._local, "conn", None)
        if held is None or held[0] != self._generation:  # none yet, or opened before a rebuild
            if held is not None:  # closed already by a rebuild, or left open by a swap
                held[1].close()
                with self._readers_lock:  # a rebuild emptied the list already
                    self._readers = [c for c in self._readers if c is not held[1]]
            conn = self._connect()
            self._local.conn = (self._generation, conn)
            with self._readers_lock:
                self._readers.append(conn)
            return conn
        return held[1]

    def rebuild(self, reason: str) -> None:
        """Set a damaged file aside and start an empty one."""
        with self.lock:
            self._close_all()
            self._move_aside()
            self._generation += 1
            self._checkpoint_pages = 0
            self.writer = self._connect_checked()
            self.recovered = f"{self.path} was unreadable ({reason}); rebuilt it from scratch"

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction on the writer: committed, or rolled back on any error."""
        with self.lock:
            self.follow_swap()
            try:
                self.writer.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if is_locked(exc):
                    raise IndexLocked(f"{self.path} is locked by another process") from exc
                raise
            try:
                yield self.writer
            except BaseException as exc:
                if self.writer.in_transaction:  # SQLite already rolled back (a full disk)
                    self.writer.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc):
                    raise IndexUnavailable(f"{self.path} is read-only: {exc}") from exc
                raise
            self.writer.execute("COMMIT")

    @contextmanager
    def idle_writer(self) -> Iterator[sqlite3.Connection | None]:
        """The writer when no write holds it (a try-lock: never waits), else None; held for
        the ``with`` block."""
        self.follow_swap()
        if not self.lock.acquire(blocking=False):
            yield None
            return
        try:  # the lock is reentrant: this thread's own write may hold it
            yield None if self.writer.in_transaction else self.writer
        finally:
            self.lock.release()

    def pragma(self, setting: str) -> None:
        self.follow_swap()
        with self.lock:
            self.writer.execute(f"PRAGMA {setting}")

    def autocheckpoint(self, pages: int) -> None:
        """The writer's ``wal_autocheckpoint``, set only when it changes."""
        self.follow_swap()
        with self.lock:
            if self._checkpoint_pages != pages:
                self.writer.execute(f"PRAGMA wal_autocheckpoint={pages}")
                self._checkpoint_pages = pages

    def close(self) -> None:
        with self.lock:
            self._close_all()
            forget(self.path)

    def _close_all(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self.writer.close()
        self._in_place.stop()  # after the connections: its close drops their locks


def _check_before_writing(path: Path, busy_timeout: float) -> None:
    """``_trust`` on a connection that changes nothing: before migrating (that writes, and
    writes run triggers) and before WAL mode (switching it rewrites the file's header), so a
    file set aside keeps its bytes."""
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    try:
        _trust(conn)
    finally:
        conn.close()


def _trust(conn: sqlite3.Connection) -> None:
    strange = strange_objects(conn)
    if strange:
        raise IndexUntrusted(f"not made by this kiln (it holds {', '.join(strange[:3])})")
    if not made_here.trusted(conn):  # a checkout's own index.db: its rows could say anything
        raise IndexUntrusted(
            "not made by kiln under this account (it lacks the mark of $KILN_HOME/index-key)"
        )


def is_foreign(exc: BaseException) -> bool:
    """An error that says the file is a SQLite database of another shape (another program's,
    a hand-edited one, a future kiln's): opening it or migrating it found its tables wrong."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return any(m in text for m in ("no such table", "no such column", "already exists"))


def is_locked(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def out_of_space(exc: BaseException) -> bool:
    """A full disk (SQLITE_FULL), or a write refused for its size (EFBIG: a quota, a file
    size limit), which SQLite reports as an I/O error; both read "database error: …" before,
    naming neither the file nor what to do."""
    text = str(exc).lower()
    return "database or disk is full" in text or "disk i/o error" in text
