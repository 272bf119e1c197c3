"""Kiln's own files are never indexed: its state under ``KILN_HOME`` when that folder lies
inside the workspace (the index key, sessions, settings, the temporary files of their atomic
writes were indexed and searchable, the key a secret), and the temporary file of an atomic
write Kiln makes beside a workspace file, were a full scan to run while one exists. Through
the real `kiln index` and `kiln search`, and the one-file update the watcher and editor use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from indexer import Index

from .conftest import write

pytestmark = pytest.mark.e2e


def kiln(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "KILN_HOME": str(home)},
    )  # fmt: skip


def paths(repo: Path, home: Path, query: str) -> list[str]:
    result = kiln("search", query, "--json", cwd=repo, home=home)
    assert result.returncode == 0, result.stderr
    return sorted(hit["path"] for hit in json.loads(result.stdout))


def test_kiln_home_inside_the_workspace_is_not_indexed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = repo / "state"
    write(repo, "app.py", "def appmain():\n    pass\n")
    write(repo, "state/sessions/s1.py", "def kilnstatesymbol():\n    pass\n")
    result = kiln("index", ".", cwd=repo, home=home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("indexed 1 files"), result.stdout
    key = (home / "index-key").read_text().strip()
    assert len(key) == 64
    assert paths(repo, home, key) == []
    assert paths(repo, home, "kilnstatesymbol") == []
    assert paths(repo, home, "appmain") == ["app.py"]
    monkeypatch.setenv("KILN_HOME", str(home))
    with Index(repo) as idx:  # the watcher's and the editor's one-file update
        assert idx.update_file("state/sessions/s1.py") == 0
        assert idx.update_file("state/index-key") == 0
        assert idx.search("kilnstatesymbol") == []


def test_the_temporary_files_of_kilns_atomic_writes_are_not_indexed(
    repo: Path, tmp_path: Path
) -> None:
    """As a full scan meets them in the moment before each is renamed over its file."""
    write(repo, "app.py", "def appmain():\n    pass\n")
    for name in (
        ".KILN.md.k3j4h5.kiln-tmp",  # agent.workspace.atomic_write
        ".app.py.0a1b2c3d.kiln-tmp",  # agent.workspace.write_inside
        ".skills-lock.json.4242.0a1b2c3d.tmp",  # skills_registry.local_state
        "sub/.notes.py.kiln",  # agent.sandbox.git_todo
        ".index-key.4242.tmp",  # indexer.made_here
    ):
        write(repo, name, "def kilntempsymbol():\n    pass\n")
    home = tmp_path / "home"
    assert kiln("index", ".", cwd=repo, home=home).returncode == 0
    assert paths(repo, home, "kilntempsymbol") == []
    assert paths(repo, home, "appmain") == ["app.py"]
