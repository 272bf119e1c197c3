"""Whether an index file was made by a Kiln of this account: a checkout can ship its own
``.kiln/index.db``, valid in every way the schema checks look at, whose rows say what its
files do not (a ``files`` row whose mtime and size match the file on disk is never read again,
so planted blocks, definitions and commits reached `kiln search` and the model as the file's).

An index is trusted only when its ``meta`` table holds the mark of the key kept in
``$KILN_HOME/index-key`` (32 random bytes, made on first use, readable by the user alone): an
HMAC a checkout cannot compute. Kiln writes the mark in the transaction that creates the
index's tables, so a file is either new (no tables yet) or marked; anything else is set aside
and rebuilt from the files (``database``). Where ``KILN_HOME`` cannot be written, the key lives
as long as the process: each run then rebuilds the index it finds.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import stat
import threading
from pathlib import Path

from kiln_errors.home import kiln_home

KEY_FILE = "index-key"
KEY_HEX = 64  # 32 bytes, as hex
MARK = "made_here"  # the ``meta`` key that holds the mark
_SALT = b"kiln index mark v1\0"

_keys: dict[str, bytes] = {}  # per KILN_HOME: read once per process
_lock = threading.Lock()


def mark() -> str:
    """The mark an index made here holds."""
    return hmac.new(_key(), _SALT, hashlib.sha256).hexdigest()


def trusted(conn: sqlite3.Connection) -> bool:
    """Whether the file behind ``conn`` is new (no table yet: Kiln makes it now) or holds
    this account's mark. Reads the schema and one ``meta`` row, nothing else."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").fetchone() is None:
        return True
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (MARK,)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such" in str(exc).lower():  # no meta table (or no such column): not Kiln's
            return False
        raise
    return row is not None and isinstance(row[0], str) and hmac.compare_digest(row[0], mark())


def write(conn: sqlite3.Connection) -> None:
    """Record the mark (inside the transaction that creates the tables), and give the file an
    id of its own in its header (``wal_pairing.InPlace`` tells a file copied over it by it)."""
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (MARK, mark()))
    conn.execute(f"PRAGMA application_id = {secrets.randbelow(2**31 - 1) + 1}")


def _key() -> bytes:
    home = kiln_home()
    with _lock:
        key = _keys.get(str(home))
        if key is None:
            key = _keys[str(home)] = _read(home / KEY_FILE) or _made(home) or os.urandom(32)
        return key


def _read(path: Path) -> bytes | None:
    """The key in ``path``, if it is a regular file holding one (never through a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, KEY_HEX + 2).decode("ascii", errors="replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return bytes.fromhex(text) if len(text) == KEY_HEX else None
    except ValueError:
        return None


def _made(home: Path) -> bytes | None:
    """A new key written to ``home/index-key`` whole or not at all (a temporary file linked
    into place: two processes starting at once agree on the first one's); None when the
    folder cannot be written. A file there that holds no key is replaced."""
    path = home / KEY_FILE
    temp = home / f".{KEY_FILE}.{os.getpid()}.tmp"  # dotted: never indexed, never listed
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.path.lexists(temp):
            os.unlink(temp)
        fd = os.open(temp, flags, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(KEY_HEX // 2) + "\n")
        try:
            os.link(temp, path)
        except FileExistsError:
            if _read(path) is None:  # not a key: a stray file (never a link followed)
                os.replace(temp, path)
        return _read(path)
    except OSError:
        return None
    finally:
        try:
            os.unlink(temp)
        except OSError:
            pass
