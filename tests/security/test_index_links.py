"""A checkout that ships ``.kiln`` or ``.kiln/index.db`` as a link (docs/security.md, "The code
index"): SQLite follows links, so `kiln index` would create or overwrite a file of the user's
outside the workspace. Through the real `kiln index`: one line, a non-zero exit, nothing
written where the link points."""

from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer
from tests.waiting import POLL


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
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "is a link" in lines[0], result.stderr
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


@pytest.mark.parametrize("name", ["index.db", "index.db-wal", "index.db-shm"])
def test_an_index_file_hard_linked_to_a_users_file_is_not_written(
    tmp_path: Path, checkout: Path, name: str
) -> None:
    """git cannot ship a hard link; an unpacked archive or a setup script can. Before, the
    index's tables were written into the user's SQLite file named ``index.db``, and a ``-wal``
    name of the user's ``.bashrc`` was overwritten with WAL pages."""
    users = tmp_path / "users-file"
    if name == "index.db":
        conn = sqlite3.connect(users)
        conn.execute("CREATE TABLE notes (text)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
        conn.commit()
        conn.close()
        (checkout / ".kiln").mkdir()
    else:
        users.write_text("export EDITOR=vi\n")
        assert _kiln("index", ".", cwd=checkout).returncode == 0  # an index of its own
        (checkout / ".kiln" / name).unlink(missing_ok=True)
    before = users.read_bytes()
    os.link(users, checkout / ".kiln" / name)
    for command in (["index", "."], ["search", "handler"]):
        result = _kiln(*command, cwd=checkout)
        assert result.returncode == 2, result.stderr
        assert result.stderr.splitlines() == [
            f"kiln: {checkout / '.kiln' / name} is a hard link (one of 2 names of a file);"
            " kiln does not write the index through it (remove the link: the index is written"
            " only to <root>/.kiln/index.db itself)"
        ]
    assert users.read_bytes() == before
    assert users.stat().st_nlink == 2  # left for the user to remove


def test_a_real_kiln_folder_still_indexes(checkout: Path) -> None:
    result = _kiln("index", ".", cwd=checkout)
    assert result.returncode == 0, result.stderr
    assert (checkout / ".kiln" / "index.db").is_file()


async def test_kiln_lsp_reports_the_index_unavailable_and_writes_nothing(
    tmp_path: Path, checkout: Path
) -> None:
    """`kiln lsp` in such a checkout: `kiln/index/status` says unavailable, nothing is written
    where the link points, and the server goes on answering."""
    outside = tmp_path / "users-folder"
    outside.mkdir()
    (checkout / ".kiln").symlink_to(outside)
    server = await RawServer.start(checkout, server_env(tmp_path / "home"))
    try:
        await server.initialize(checkout, initializationOptions={"index": True})
        status: dict[str, object] = {"state": "idle"}
        ids = itertools.count()

        async def settled() -> None:  # the build starts after `initialized`, off the loop
            nonlocal status
            while status["state"] in ("idle", "indexing"):
                await asyncio.sleep(POLL)
                status = (await server.request(next(ids), "kiln/index/status", {}))["result"]

        await asyncio.wait_for(settled(), 60)
        assert status["state"] == "unavailable", status
        assert "is a link" in str(status.get("error")), status
        assert "result" in await server.request("hello", "kiln/hello")
    finally:
        await server.close()
    assert list(outside.iterdir()) == []
