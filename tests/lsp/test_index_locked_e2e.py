"""An edit `kiln lsp` could not write because another process held the index's write lock
(a `kiln index` in a terminal, a second editor) past the busy timeout, or because the disk was
full: it was only logged, and the index kept the old text until the file was typed in again.
It now waits and is written once the lock is free or there is room: by the next search, or on
its own a moment later."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from indexer import Index
from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer
from tests.lsp.test_index_fresh_e2e import _open, _replace, _search, _search_steps
from tests.waiting import until

pytestmark = pytest.mark.e2e

HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
"""


def _hold_write_lock(db: Path) -> subprocess.Popen[str]:
    """A second process holding the index's write lock until its stdin is closed."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def _logged(server: RawServer, word: str) -> list[str]:
    """The editor's log lines that hold ``word``."""
    return [
        m["params"]["message"]
        for m in server.messages
        if m.get("method") == "window/logMessage" and word in m["params"]["message"]
    ]


def _locked_lines(server: RawServer) -> list[str]:
    """The editor's log lines saying an index write found the index locked."""
    return _logged(server, "locked")


def _in_index(db: Path, name: str) -> bool:
    """Whether the index file holds a block named ``name`` (read by a connection of its own,
    as another process would)."""
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT 1 FROM blocks WHERE name = ?", (name,)).fetchone() is not None
    finally:
        conn.close()


async def _session_with_app_open(server: Any, root: Path) -> tuple[str, str]:
    """Initialise, wait for the first scan, open a session and app.py as written on disk."""
    await server.initialize(root)
    await server.index_until(lambda s: s["state"] == "ready" and s["pendingFiles"] == 0)
    sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
    uri = (root / "app.py").as_uri()
    _open(server, uri, "def greet(name):\n    return name\n")
    await server.index_until(lambda s: s["pendingFiles"] == 0)
    return sid, uri


async def test_an_edit_made_while_another_process_writes_reaches_the_index(
    tmp_path: Path, scripted_env: Any
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return name\n")
    env = {**scripted_env(_search_steps("held_marker", "held_marker", "later_marker")),
           "KILN_INDEX_BUSY_TIMEOUT": "0.5"}  # fmt: skip
    db = root / ".kiln" / "index.db"
    server = await RawServer.start(root, env)
    holder = None
    try:
        sid, uri = await _session_with_app_open(server, root)

        holder = _hold_write_lock(db)
        _replace(server, uri, 2, "def held_marker():\n    pass\n")
        _, text = await _search(server, sid)  # the buffer's write waits, then gives up
        assert "function held_marker" not in text, text
        assert (await server.index_until(lambda s: True))["pendingFiles"] == 1
        holder.communicate("\n", timeout=60)  # the lock is free again
        holder = None
        status, text = await _search(server, sid)
        assert status == "completed" and "function held_marker" in text, text

        holder = _hold_write_lock(db)  # again, and this time no search asks for it
        said = len(_locked_lines(server))
        _replace(server, uri, 3, "def later_marker():\n    pass\n")
        await server.wait_for(lambda m: len(_locked_lines(server)) > said)  # it gave up
        holder.communicate("\n", timeout=60)
        holder = None
        await until(lambda: _in_index(db, "later_marker"), what="the edit written on its own")
        await server.index_until(lambda s: s["pendingFiles"] == 0)
        _, text = await _search(server, sid)
        assert "function later_marker" in text and "function held_marker" not in text, text
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]


def _indexed_then_new(tmp_path: Path, name: str) -> Path:
    """A workspace indexed once, then given a file defining ``name`` the index has not seen."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return name\n")
    with Index(root) as idx:
        idx.update()
    (root / f"{name}.py").write_text(f"def {name}():\n    pass\n")
    return root


async def _waits_out_the_lock(root: Path, kiln_home: Path, db: Path, name: str) -> None:
    """Start `kiln lsp` while another process holds ``db``'s write lock: the index says it is
    indexing and why, then, once the lock is let go, it is ready and holds block ``name``."""
    holder: subprocess.Popen[str] | None = _hold_write_lock(db)
    server = await RawServer.start(root, server_env(kiln_home, KILN_INDEX_BUSY_TIMEOUT="0.3"))
    try:
        await server.initialize(root)
        await server.wait_for(lambda m: bool(_locked_lines(server)))  # it met the lock
        status = await server.index_until(lambda s: True)
        assert status["state"] == "indexing" and "locked" in status["error"], status
        assert holder is not None
        holder.communicate("\n", timeout=60)
        holder = None
        status = await server.index_until(lambda s: s["state"] != "indexing")
        assert status["state"] == "ready" and "error" not in status, status
        assert _in_index(db, name)
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]


async def test_a_first_scan_that_finds_the_index_locked_waits_for_it(
    tmp_path: Path, kiln_home: Path
) -> None:
    """The editor opened while a `kiln index` held the lock: the first scan gave up after the
    busy timeout and the index stayed "unavailable" for the whole session (a file new on disk
    was never found, typed buffers never written). It now waits and scans once it is free."""
    root = _indexed_then_new(tmp_path, "fresh_marker")
    await _waits_out_the_lock(root, kiln_home, root / ".kiln" / "index.db", "fresh_marker")


async def test_an_index_being_created_by_another_process_is_waited_for_on_open(
    tmp_path: Path, kiln_home: Path
) -> None:
    """The editor opened while a `kiln index` was creating the index (its first write held
    the lock): opening it needs to write the schema too, failed after the busy timeout, and the
    index was "unavailable" for the whole session. Opening now waits as the scan does."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def opened_late():\n    pass\n")
    (root / ".kiln").mkdir()  # an empty database, its first transaction still open
    await _waits_out_the_lock(root, kiln_home, root / ".kiln" / "index.db", "opened_late")


async def test_exit_while_the_index_waits_for_a_lock_ends_the_process(
    tmp_path: Path, kiln_home: Path
) -> None:
    """`shutdown` and `exit` while the index thread sat in SQLite's busy wait (another process
    held the lock, a long `KILN_INDEX_BUSY_TIMEOUT`): Python waited at exit for that thread, so
    the editor's `exit` left the server running until the wait ran out (here 300 s; in CI a
    scan stuck past 60 s). The process now ends a few seconds after the answer, and the
    index it left is whole: the next `kiln index` brings it up to date."""
    root = _indexed_then_new(tmp_path, "late_marker")
    db = root / ".kiln" / "index.db"
    holder = _hold_write_lock(db)
    server = await RawServer.start(root, server_env(kiln_home, KILN_INDEX_BUSY_TIMEOUT="300"))
    try:
        await server.initialize(root)
        # opening the index or the scan's first write is waiting for the lock (which of the
        # two depends on what SQLite must write to open it: either holds the thread)
        await server.index_until(lambda s: s["state"] == "indexing")
        assert (await server.request("bye", "shutdown"))["result"] is None
        server.notify("exit")
        assert await server.exit_code(timeout=60) == 0
    finally:
        holder.communicate("\n", timeout=60)
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
    indexed = subprocess.run(
        [sys.executable, "-m", "lsp_server", "index", str(root)], capture_output=True, text=True,
        timeout=120, env=server_env(kiln_home),
    )  # fmt: skip
    assert indexed.returncode == 0, indexed.stderr
    assert _in_index(db, "late_marker")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (root only: skipped where it cannot be mounted)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def _fill(disk: Path) -> Path:
    """A file that takes the disk's last free byte."""
    filler = disk / "filler"
    with filler.open("wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass
    return filler


async def test_an_edit_made_while_the_disk_is_full_reaches_the_index_once_there_is_room(
    small_disk: Path, scripted_env: Any
) -> None:
    """An edit's write that found the disk full was dropped like a locked one: once space was
    freed, a search still answered the old text until the file was typed in again."""
    root = small_disk / "ws"
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return name\n")
    steps = _search_steps("full_marker", "full_marker")
    server = await RawServer.start(root, scripted_env(steps))
    filler = None
    try:
        sid, uri = await _session_with_app_open(server, root)
        filler = _fill(small_disk)
        big = "".join(
            f"def full_marker_{n}(value):\n    return value * {n}\n\n" for n in range(3000)
        )
        _replace(server, uri, 2, "def full_marker():\n    pass\n\n" + big)
        await server.wait_for(lambda m: bool(_logged(server, "full")))
        _, text = await _search(server, sid)
        assert "function full_marker\n" not in text and "full_marker()" not in text, text
        filler.unlink()
        status, text = await _search(server, sid)
        assert status == "completed" and "full_marker()" in text, text
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]


async def test_a_first_scan_that_finds_the_disk_full_waits_for_room(
    small_disk: Path, kiln_home: Path
) -> None:
    """The first scan met a full disk: the index was "unavailable" for the whole session, also
    once space was freed. It now says why and scans again until there is room."""
    root = small_disk / "ws"
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return name\n")
    with Index(root) as idx:
        idx.update()
    body = "".join(f"def room_marker_{n}(value):\n    return value * {n}\n\n" for n in range(3000))
    (root / "fresh.py").write_text(body)
    spare = small_disk / "spare"  # room to open the index, not to write fresh.py's rows
    spare.write_bytes(b"\0" * 160_000)
    filler = _fill(small_disk)
    spare.unlink()
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root)
        await server.wait_for(lambda m: bool(_logged(server, "full")))
        status = await server.index_until(lambda s: True)
        assert status["state"] == "indexing" and "full" in status["error"], status
        filler.unlink()
        status = await server.index_until(lambda s: s["state"] != "indexing")
        assert status["state"] == "ready" and "error" not in status, status
        assert _in_index(root / ".kiln" / "index.db", "room_marker_2999")
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
