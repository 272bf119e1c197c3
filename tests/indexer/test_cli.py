"""`kiln index` / `kiln search` as a user runs them: real subprocesses on a temp repository."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.child_signals import as_from_a_terminal
from tests.waiting import wait_until

from .conftest import write

pytestmark = pytest.mark.e2e


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture
def project(repo: Path) -> Path:
    write(
        repo,
        "app/orders.py",
        'def cancel_order(order_id):\n    """Cancel an order and refund it."""\n    return refund(order_id)\n',
    )
    write(repo, "app/refunds.py", "def refund(order_id):\n    return order_id\n")
    write(repo, "README.md", "# Orders\n\nCancelling an order triggers a refund.\n")
    return repo


def test_search_builds_the_index_first_and_prints_json(project: Path) -> None:
    result = kiln("search", "cancel order", "--json", "-k", "3", cwd=project)
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert hits[0]["path"] == "app/orders.py" and hits[0]["name"] == "cancel_order"
    for hit in hits:
        assert set(hit) == {"path", "start_line", "end_line", "kind", "name", "score"}
        assert not hit["path"].startswith("/")
    assert (project / ".kiln" / "index.db").exists()


def test_index_json_summary_then_incremental(project: Path) -> None:
    first = kiln("index", str(project), "--json", cwd=project.parent)
    assert first.returncode == 0, first.stderr
    stats = json.loads(first.stdout)
    assert stats["files_indexed"] == 3 and stats["total_blocks"] >= 3
    second = json.loads(kiln("index", "--json", cwd=project).stdout)
    assert second["files_indexed"] == 0 and second["total_files"] == 3


def test_index_text_summary_is_one_line(project: Path) -> None:
    result = kiln("index", cwd=project)
    assert result.returncode == 0
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("indexed 3 files") and "MB/s" in lines[0]
    assert result.stderr == ""  # no progress bar when stderr is not a terminal


def test_search_text_output(project: Path) -> None:
    result = kiln("search", "refund", "--root", str(project), cwd=project.parent)
    assert result.returncode == 0
    assert "app/refunds.py:1-2  function refund" in result.stdout


def test_stop_word_query_is_a_clear_empty_result(project: Path) -> None:
    result = kiln("search", "the of ?", "--json", cwd=project)
    assert result.returncode == 0
    assert json.loads(result.stdout) == []
    assert "no searchable words" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("search", "- refund an order", "--json", "-k", "2"),  # a changelog-style subject
        ("search", "--json", "-refund order"),
        ("search", "-k", "2", "--refund", "--json"),
        ("search", "-k2", "--json", "-kind of refund"),  # -k2 is -k; "-kind …" is not
        ("search", "--root=.", "--json", "--", "-refund"),  # `--` still works
    ],
)
def test_a_query_starting_with_a_dash_is_a_query(project: Path, args: tuple[str, ...]) -> None:
    result = kiln(*args, cwd=project)
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert hits[0]["path"] == "app/refunds.py" and hits[0]["name"] == "refund"
    if "-k" in args or "-k2" in args:
        assert len(hits) <= 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "refund", "-k"), "Option '-k' requires an argument"),
        (("search", "-k", "many", "refund"), "'many' is not a valid integer"),
        (("search", "refund", "--root", "/definitely/not/here"), "does not exist"),
    ],
)
def test_real_options_keep_their_errors(project: Path, args: tuple[str, ...], message: str) -> None:
    result = kiln(*args, cwd=project)
    assert result.returncode == 2 and message in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("search",),
        ("search", "x", "-k", "0"),
        ("search", "x", "--root", "/definitely/not/here"),
        ("index", "/definitely/not/here"),
        ("index", "--bogus"),
    ],
)
def test_misuse_exits_2_with_one_line(project: Path, args: tuple[str, ...]) -> None:
    result = kiln(*args, cwd=project)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_corrupt_index_is_rebuilt_with_a_message(project: Path) -> None:
    (project / ".kiln").mkdir()
    (project / ".kiln" / "index.db").write_bytes(b"garbage" * 1000)
    result = kiln("search", "refund", "--json", cwd=project)
    assert result.returncode == 0
    assert "rebuilt" in result.stderr and json.loads(result.stdout)[0]["name"] == "refund"


def test_index_damaged_inside_is_rebuilt_by_search(project: Path) -> None:
    for i in range(20):
        write(project, f"more/m{i}.py", f"def padding_{i}(x):\n    return x + {i}\n")
    assert kiln("index", cwd=project).returncode == 0
    db = project / ".kiln" / "index.db"
    with db.open("r+b") as fh:
        fh.seek(db.stat().st_size // 2)
        fh.write(b"\x00\xff" * 4000)
    result = kiln("search", "refund", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["name"] == "refund"


def test_locked_index_is_one_line_and_exit_1(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert kiln("index", cwd=project).returncode == 0
    holder = sqlite3.connect(project / ".kiln" / "index.db", isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO meta VALUES ('held', '1')")
        monkeypatch.setenv("KILN_INDEX_BUSY_TIMEOUT", "0.1")
        result = kiln("index", cwd=project)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "locked" in result.stderr


def test_index_watch_reports_batches_and_stops_on_ctrl_c(project: Path) -> None:
    import select
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "index", "--watch", "--json"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_from_a_terminal,
    )

    def line() -> dict:
        assert proc.stdout is not None
        ready, _, _ = select.select(
            [proc.stdout], [], [], 60
        )  # a bound for a loaded host, not a timing
        assert ready, "no output from kiln index --watch"
        return json.loads(proc.stdout.readline())

    try:
        assert line()["total_files"] == 3
        assert line()["event"] == "watching"
        write(project, "app/late.py", "def arrived_while_watching():\n    pass\n")
        batch = line()
        assert batch["event"] == "batch" and "app/late.py" in batch["paths"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    found = json.loads(kiln("search", "arrived_while_watching", "--json", cwd=project).stdout)
    assert found[0]["name"] == "arrived_while_watching"


def test_search_after_an_interrupted_first_index_finishes_it(tmp_path: Path) -> None:
    """A first `kiln index` killed after some batches leaves an index holding part of the
    tree; `kiln search` resumes the build instead of answering from that part."""
    repo = tmp_path / "repo"
    body = "".join(f"def handler_{j}(request):\n    return request * {j}\n\n" for j in range(120))
    for i in range(400):
        path = repo / f"pkg{i % 20}" / f"module_{i:03}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}."""\n\n' + body + f"def unique_marker_{i}():\n    pass\n")
    db = repo / ".kiln" / "index.db"

    def indexed() -> int:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                return conn.execute("SELECT count(*) FROM files").fetchone()[0]
        except sqlite3.Error:
            return 0

    proc = subprocess.Popen([sys.executable, "-m", "lsp_server", "index", str(repo)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        assert wait_until(lambda: indexed() > 0 or proc.poll() is not None, 120)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with sqlite3.connect(db) as conn:
        done = conn.execute("SELECT count(*) FROM files").fetchone()[0]
        finished = conn.execute("SELECT 1 FROM meta WHERE key = 'last_indexed'").fetchone()
    if finished or done >= 400:
        pytest.skip("the first run finished before it was killed (a very fast machine)")
    missing = next(i for i in range(400) if not _indexed_path(db, f"pkg{i % 20}/module_{i:03}.py"))
    result = kiln("search", f"unique_marker_{missing}", "--json", "-k", "1", cwd=repo)
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert hits and hits[0]["name"] == f"unique_marker_{missing}", (done, hits)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 400
        assert conn.execute("SELECT 1 FROM meta WHERE key = 'last_indexed'").fetchone()


def _indexed_path(db: Path, rel: str) -> bool:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT 1 FROM files WHERE path = ?", (rel,)).fetchone() is not None
