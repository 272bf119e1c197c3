"""A checkout that ships ``.kiln`` or ``.kiln/index.db`` as a link (docs/security.md, "The code
index"): SQLite follows links, so `kiln index` would create or overwrite a file of the user's
outside the workspace. Through the real `kiln index`: one line, a non-zero exit, nothing
written where the link points."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KILN_HOME": str(cwd.parent / "home")}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def handler():\n    return 1\n")
    return root


def _refused(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert any("is a link" in line for line in lines), result.stderr
    assert "Traceback" not in result.stderr


def test_a_kiln_folder_linked_out_of_the_workspace_gets_no_index(
    tmp_path: Path, checkout: Path
) -> None:
    outside = tmp_path / "users-folder"
    outside.mkdir()
    (checkout / ".kiln").symlink_to(outside)
    _refused(_kiln("index", ".", cwd=checkout))
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("name", ["index.db", "index.db-wal"])
def test_an_index_file_linked_to_a_users_file_is_not_written(
    tmp_path: Path, checkout: Path, name: str
) -> None:
    target = tmp_path / "dotfile"
    (checkout / ".kiln").mkdir()
    (checkout / ".kiln" / name).symlink_to(target)  # not there yet: SQLite would create it
    _refused(_kiln("index", ".", cwd=checkout))
    assert not target.exists()
    _refused(_kiln("search", "handler", cwd=checkout))
    assert not target.exists()


def test_a_real_kiln_folder_still_indexes(checkout: Path) -> None:
    result = _kiln("index", ".", cwd=checkout)
    assert result.returncode == 0, result.stderr
    assert (checkout / ".kiln" / "index.db").is_file()
