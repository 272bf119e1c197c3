"""`kiln index --watch . > index.log` (or `nohup kiln index --watch . &`, which writes nohup.out
in the folder): the watcher's own output lands inside the tree it watches. Each line it prints
changes the log, which must not start another batch, whose line would change the log again."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.child_signals import as_from_a_terminal
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def _batches(log: Path) -> list[dict]:
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    return [x for x in lines if x.get("event") == "batch"]


def test_watch_output_written_inside_the_tree_does_not_feed_itself(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "app.py").write_text("def first():\n    pass\n")
    log = root / "index.log"
    with log.open("w") as out, (root / "index.err").open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lsp_server", "index", "--watch", "--json", "."],
            cwd=root,
            stdout=out,
            stderr=err,
            preexec_fn=as_from_a_terminal,
        )
    try:
        assert wait_until(lambda: '"event": "watching"' in log.read_text()), log.read_text()
        (root / "one.py").write_text("def second():\n    pass\n")
        assert wait_until(lambda: any("one.py" in b["paths"] for b in _batches(log)))
        # The line just printed changed index.log; a later change shows whether that started
        # a batch of its own (it would be queued before this one).
        (root / "two.py").write_text("def third():\n    pass\n")
        assert wait_until(lambda: any("two.py" in b["paths"] for b in _batches(log)))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    batches = _batches(log)
    assert [p for b in batches for p in b["paths"]] == ["one.py", "two.py"], batches
    assert proc.returncode == 0


def test_watch_does_not_list_the_temp_files_of_kilns_own_atomic_writes(tmp_path: Path) -> None:
    """The memory writer (remember, KILN.md) and the skills lockfile write a hidden temporary
    file beside their file and rename it over: a batch names the file, never the temp file."""
    from agent.workspace import atomic_write
    from skills_registry.local_state import write_atomically

    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    log = tmp_path / "index.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lsp_server", "index", "--watch", "--json", "."],
            cwd=root,
            stdout=out,
            stderr=subprocess.DEVNULL,
            preexec_fn=as_from_a_terminal,
        )
    try:
        assert wait_until(lambda: '"event": "watching"' in log.read_text()), log.read_text()
        atomic_write(root / "KILN.md", "# Notes\n- use tabs\n", root=root)
        atomic_write(root / "notes.md", "# More\n")  # the mkstemp spelling
        write_atomically(root / "skills-lock.json", b"{}\n")
        seen = ["KILN.md", "notes.md", "skills-lock.json"]
        assert wait_until(lambda: {p for b in _batches(log) for p in b["paths"]} >= set(seen))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    paths = sorted({p for b in _batches(log) for p in b["paths"]})
    assert paths == seen, paths
