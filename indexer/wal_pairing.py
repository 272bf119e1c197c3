"""Which ``index.db`` an ``index.db-wal`` belongs to.

SQLite pairs a database with its ``-wal`` and ``-shm`` by name only. A file put in the index's
place under a running server (another process's rebuild, a copy, a restored backup) adopts the
``-wal`` and ``-shm`` left beside it: SQLite reads the old file's pages over the new one and, at
the next checkpoint, writes them into it. So Kiln notes, in ``index.db-pair``, the identities
(device and inode) of the database and ``-wal`` it opened together; a ``-wal`` noted with
another database is removed, with its ``-shm``, before the file beside it is opened. A ``-wal``
the note does not vouch for (a checkout that tracks ``index.db-wal``: SQLite would apply its
frames over the user's file) is set aside, with its ``-shm``, as ``index.db-wal.unvouched``
when no process holds a lock on the database or its ``-shm`` (``set_aside_unvouched``); one
another program has open is left to it. A run killed mid-write keeps what it committed: its
``-wal`` is noted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

PAIR = "-pair"  # index.db-pair, beside the -wal and -shm (and under .kiln/.gitignore's index.db*)
MAX_PAIR_BYTES = 200  # four integers: a longer file is not Kiln's note

Identity = tuple[int, int]


def identity(path: Path | str) -> Identity | None:
    """The file's (device, inode), without following a link; None when there is none."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _sibling(db_path: Path, suffix: str) -> Path:
    return db_path.with_name(db_path.name + suffix)


def note(db_path: Path) -> None:
    """Note that ``db_path`` and the ``-wal`` beside it now belong together (a folder that
    cannot be written keeps no note: nothing is then removed)."""
    db, wal = identity(db_path), identity(_sibling(db_path, "-wal"))
    if db is None or wal is None:
        return
    text = f"{db[0]} {db[1]} {wal[0]} {wal[1]}\n"
    pair = _sibling(db_path, PAIR)
    if _read(pair) == text:
        return
    temp = _sibling(db_path, f"{PAIR}.{os.getpid()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        if os.path.lexists(temp):  # left by a killed process: never written through
            os.unlink(temp)
        fd = os.open(temp, flags, 0o644)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(text)
        os.replace(temp, pair)  # a link at ``pair`` is replaced, never followed
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass


def _read(pair: Path) -> str | None:
    try:
        fd = os.open(pair, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        return os.read(fd, MAX_PAIR_BYTES + 1).decode("ascii", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def stale(db_path: Path) -> bool:
    """Whether the ``-wal`` beside ``db_path`` is noted as another database's (a reader that
    opens the file on its own, such as the editor's ``@`` completion, reads nothing then)."""
    wal = identity(_sibling(db_path, "-wal"))
    text = _read(_sibling(db_path, PAIR))
    if wal is None or text is None:
        return False
    try:
        a, b, c, d = (int(part) for part in text.split())
    except ValueError:
        return False
    return (c, d) == wal and (a, b) != identity(db_path)  # the -wal noted, with another file


def remove_stale(db_path: Path) -> str | None:
    """Remove a ``-wal`` (and the ``-shm`` beside it) noted as another database's; return the
    line that says so, or None when there was none."""
    if not stale(db_path):
        return None
    return remove_wal(db_path, "was replaced by another file")


def remove_wal(db_path: Path, what: str) -> str:
    """Remove the ``-wal`` and ``-shm`` beside ``db_path`` (the file before it left them);
    the line that says so."""
    for suffix in ("-wal", "-shm"):
        try:
            os.unlink(_sibling(db_path, suffix))
        except FileNotFoundError:
            pass
    return (
        f"{db_path} {what}; the -wal and -shm left by the file before it were removed, not"
        " applied to it"
    )


UNVOUCHED = ".unvouched"  # index.db-wal.unvouched, index.db-shm.unvouched
LOCKS = Path("/proc/locks")  # every lock on the system: read, so no descriptor is opened
_LOCKED_FILE = re.compile(rb"\b[0-9a-f]+:[0-9a-f]+:([0-9]+)\b")


def vouched(db_path: Path) -> bool:
    """Whether the note names the database and the ``-wal`` now beside it together."""
    db, wal = identity(db_path), identity(_sibling(db_path, "-wal"))
    text = _read(_sibling(db_path, PAIR))
    if db is None or wal is None or text is None:
        return False
    try:
        a, b, c, d = (int(part) for part in text.split())
    except ValueError:
        return False
    return (a, b) == db and (c, d) == wal


def in_use(db_path: Path) -> bool:
    """Whether any process (this one too) holds a lock on the database or its ``-shm``: SQLite
    keeps a shared lock on the database file and on byte 128 of the ``-shm`` for as long as a
    connection in WAL mode has it open. Read from ``/proc/locks``, never by opening the files:
    closing a descriptor drops every lock this process holds on the file, its connections'
    too. True where the locks cannot be read (the ``-wal`` is then left to SQLite)."""
    files = [identity(db_path), identity(_sibling(db_path, "-shm"))]
    inodes = {str(f[1]).encode() for f in files if f is not None}
    if not inodes:
        return False
    try:
        text = LOCKS.read_bytes()
    except OSError:
        return True
    return any(m.group(1) in inodes for m in _LOCKED_FILE.finditer(text))


@contextlib.contextmanager
def opening(db_path: Path) -> Iterator[None]:
    """Held by a Kiln open from its ``-wal`` check to its note (``note``): another Kiln opener
    of a new file would otherwise see the first one's ``-wal`` before it is vouched for, between
    two of its locks, and set it aside under it (SQLite: "disk I/O error"). Not held where the
    lock file cannot be made (a read-only folder: nothing is written there either)."""
    try:
        fd = os.open(_sibling(db_path, "-opening"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
                     | getattr(os, "O_NOFOLLOW", 0), 0o600)  # fmt: skip
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # a flock is dropped with its descriptor


def set_aside_unvouched(db_path: Path) -> str | None:
    """Rename a ``-wal`` (and the ``-shm`` beside it) that Kiln's note does not vouch for and
    that no process has open to ``index.db-wal.unvouched``, so SQLite never applies its frames
    to the file beside it (a checkout can ship one); the line that says so, or None."""
    wal = _sibling(db_path, "-wal")
    if not os.path.lexists(wal) or vouched(db_path) or in_use(db_path):
        return None
    for suffix in ("-wal", "-shm"):
        src = _sibling(db_path, suffix)
        if os.path.lexists(src):  # a link is renamed, never followed
            os.replace(src, _sibling(db_path, suffix + UNVOUCHED))
    return (
        f"{wal} was not written by kiln beside this index and no process has it open; set it"
        f" aside as index.db-wal{UNVOUCHED}, not applied"
    )


def forget(db_path: Path) -> None:
    """Drop the note once the ``-wal`` is gone (the last connection's close deletes it): a
    ``-wal`` made later under the same inode number is then not vouched for."""
    if not os.path.lexists(_sibling(db_path, "-wal")):
        try:
            os.unlink(_sibling(db_path, PAIR))
        except OSError:
            pass


def sweep(db_path: Path) -> None:
    """Remove the temporary notes (``index.db-pair.<pid>``) of processes no longer running:
    one killed between writing its note and moving it into place left it there, and repeated
    kills piled them up in the index folder. A live process's note, and any other name, stay."""
    prefix = db_path.name + PAIR + "."
    try:
        names = [n for n in os.listdir(db_path.parent) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix) :]
        if not pid.isascii() or not pid.isdigit() or len(pid) > 10 or _alive(int(pid)):
            continue
        try:
            os.unlink(db_path.parent / name)  # a link is removed, never followed
        except OSError:
            pass


def _alive(pid: int) -> bool:
    if pid <= 0 or pid == os.getpid():  # not a process id; this one's (``note`` clears it)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


APP_ID_OFFSET = 68  # the header's application_id: a random number each index is made with
GENERATION_OFFSET = 60  # the header's user_version: counts the opens (``next_generation``)


def next_generation(conn: sqlite3.Connection) -> int:
    """Count this open in the header's ``user_version`` and return it: the file's own older
    backup (the same id) copied over it in place holds a lower number."""
    (waits,) = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute("PRAGMA busy_timeout = 0")  # a writer at work: not counted, never waited on
    try:
        conn.execute("BEGIN IMMEDIATE")
        (now,) = conn.execute("PRAGMA user_version").fetchone()
        now = now % 0x7FFFFFFF + 1
        conn.execute(f"PRAGMA user_version = {now}")
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if "readonly" not in str(exc) and "locked" not in str(exc):  # a file that cannot be
            raise  # written: its first write says so, as before; held by a writer: the reads
        return 0  # go on as WAL lets them (0: no generation is followed)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(waits)}")
    return int(now)


class InPlace:
    """Notices a file copied over the index in place (``cp backup.db index.db``: the same
    inode, so ``identity`` is unchanged) by the id each index is made with
    (``made_here.write``), read from the file itself through a descriptor kept open for it,
    and an older backup of the same index by its lower generation (``next_generation``; other
    processes' opens only raise it). A backup taken since this open is not told apart.
    SQLite would go on with its cached pages and the old file's ``-wal`` over the new content.
    The descriptor is closed only once no connection of this process has the file open
    (``stop``): a close drops every lock the process holds on the file, its connections'
    too, and another process's last close then checkpoints and deletes the ``-wal`` in use."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._id = b""
        self._generation = 0  # the highest generation seen on the disk once armed
        self._armed = False  # the id is on the disk (a new file's is in the -wal at first)

    def start(self, db_path: Path, expected: int, generation: int = 0) -> None:
        """Follow ``db_path``, whose connection reads ``expected`` as its application_id and
        ``generation`` as its user_version (call with the descriptor of an earlier file
        closed: ``stop``)."""
        if self._fd is not None or expected == 0:
            return
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        try:
            self._fd = os.open(db_path, flags)
        except OSError:
            return
        self._id, self._armed = expected.to_bytes(4, "big", signed=True), False
        self._generation = generation
        self.replaced()

    @property
    def armed(self) -> bool:
        return self._armed

    def replaced(self) -> bool:
        """Whether the file no longer holds the id (once it was seen on the disk)."""
        if self._fd is None:
            return False
        try:
            header = os.pread(self._fd, 12, GENERATION_OFFSET)
        except OSError:
            return self._armed
        now, generation = header[8:12], int.from_bytes(header[0:4], "big", signed=True)
        if not self._armed:  # this open's generation on the disk too (at a checkpoint)
            self._armed = now == self._id and generation >= self._generation
            return False
        if now != self._id or generation < self._generation:
            return True
        self._generation = generation  # another process opened it since
        return False

    def stop(self) -> None:
        fd, self._fd = self._fd, None  # a reader on another thread then sees None, not a
        if fd is not None:  # number the system may hand out again
            os.close(fd)
