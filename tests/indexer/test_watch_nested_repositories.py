"""A workspace of 55 nested git repositories, through the real `kiln index --watch`: the index's
watcher follows the workspace root recursively, once (``indexer/watcher.py``), so an edit in the
55th repository is searchable like any other. The bound of 50 nested repositories per repository
is the sandbox's (``agent/sandbox/gitlinks.py``), not the index's."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.child_signals import as_from_a_terminal
from tests.nested_repos import nested_repositories

pytestmark = pytest.mark.e2e

COUNT = 55


def test_an_edit_in_the_55th_nested_repository_is_searchable(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    nested_repositories(root, COUNT)
    env = {**os.environ, "KILN_HOME": str(tmp_path / "kh")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "index", "--watch", "--json", "."],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=as_from_a_terminal,
    )  # fmt: skip

    def line() -> dict[str, Any]:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)  # a bound for a loaded host
        assert ready, "no output from kiln index --watch"
        data: dict[str, Any] = json.loads(proc.stdout.readline())
        return data

    last = f"repo{COUNT}/mod.py"
    try:
        assert line()["total_files"] == COUNT
        assert line()["event"] == "watching"
        with (root / last).open("a") as fh:
            fh.write("\ndef frobnicate_the_last_repository():\n    return 0\n")
        batch = line()
        while last not in batch.get("paths", []):
            batch = line()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    found = subprocess.run(
        [sys.executable, "-m", "lsp_server", "search", "frobnicate_the_last_repository", "--json"],
        cwd=root, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert json.loads(found.stdout)[0]["path"] == last
