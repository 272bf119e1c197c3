"""Parse workers end with their parent: `kill -9` of `kiln index` mid-run leaves no process
behind, and the next run finishes the index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="uses /proc"),
]


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for task in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        found.update(int(c) for c in text.split())
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has exited; only its parent's reaping is left


def test_killing_kiln_index_hard_ends_its_workers_and_the_index_resumes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    body = "".join(
        f"def handler_{j}(request, value):\n    total = value * {j}\n    return total\n\n"
        for j in range(120)
    )
    for i in range(300):  # enough files for the worker pool, and seconds of work
        path = repo / f"pkg{i % 20}" / f"module_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}."""\n\n' + body)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "index", str(repo), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_until(lambda: len(_children(proc.pid)) >= 2, 60), "no worker processes started"
        workers = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert wait_until(lambda: not any(_alive(w) for w in workers), 60), "workers outlived kiln"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    again = subprocess.run(
        [sys.executable, "-m", "lsp_server", "index", str(repo), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["total_files"] == 300


def test_a_worker_whose_parent_died_before_it_started_exits(tmp_path: Path) -> None:
    """The race of a kill right after the fork: the worker's initializer runs when its parent
    is already gone, so the parent it must watch is the pid taken before the fork, not the
    one ``getppid()`` gives by then."""
    script = (
        "import os, time\n"
        "from indexer.pipeline import _after_fork\n"
        "parent = os.getpid()\n"
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    null = os.open(os.devnull, os.O_WRONLY)\n"
        "    os.dup2(null, 1)\n"  # let go of the test's pipes: run() returns when the parent ends
        "    os.dup2(null, 2)\n"
        "    os.close(w)\n"
        "    os.read(r, 1)\n"  # returns once the parent has exited (the last writer is gone)
        "    try:\n"
        "        _after_fork(parent)\n"
        "    except Exception:\n"
        "        pass\n"  # a crash is no way to pass this test
        "    time.sleep(600)\n"  # where a worker that did not notice would stay
        "    os._exit(0)\n"
        "print(pid, flush=True)\n"
    )
    parent = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    worker = int(parent.stdout)
    try:
        assert wait_until(lambda: not _alive(worker), 60), "the worker outlived its parent"
    finally:
        if _alive(worker):
            os.kill(worker, signal.SIGKILL)
