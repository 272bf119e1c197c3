"""Several connections opening one new SQLite file at the same moment all succeed.

``PRAGMA journal_mode=WAL`` on a fresh file answers "database is locked" at once (no busy
wait) when another opener holds the lock: a language server, a CLI call and a watcher
starting together hit it. Each store that shares a file is opened from six threads at once,
over many fresh files, and every open must succeed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.session_store import SessionStore
from indexer import Index
from skills_registry.registry.sqlite_store import SQLiteStore

ROUNDS = 25
OPENERS = 6


def _race(open_one: Callable[[], object]) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(OPENERS)

    def run() -> None:
        start.wait()
        try:
            opened = open_one()
            close = getattr(opened, "close", None)
            if close is not None:
                close()
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(OPENERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _index(folder: Path) -> Callable[[], object]:
    (folder / "billing.py").write_text("def charge(amount):\n    return amount * 2\n")
    return lambda: Index(folder)


def _sessions(folder: Path) -> Callable[[], object]:
    return lambda: SessionStore(folder / "sessions.db")


def _registry(folder: Path) -> Callable[[], object]:
    def open_and_use() -> object:
        store = SQLiteStore(folder / "registry.db")
        store.connection().execute("SELECT 1").fetchone()  # the per-thread connection too
        return None

    return open_and_use


@pytest.mark.parametrize(
    "opener", [_index, _sessions, _registry], ids=["index", "sessions", "registry"]
)
def test_six_openers_of_a_new_file_all_succeed(tmp_path: Path, opener) -> None:
    failures: list[str] = []
    for n in range(ROUNDS):
        folder = tmp_path / f"r{n}"
        folder.mkdir()
        failures += [f"round {n}: {exc!r}" for exc in _race(opener(folder))]
    assert failures == []
