"""An index a checkout ships with rows its files do not hold (docs/security.md, section 6d).
A `files` row whose mtime and size match the file on disk is never read again, so an index
made elsewhere (a tarball keeps mtimes) served its planted blocks to `kiln search`, the
agent's `search_code` and the editor's `@` completion as the file's content. An index is
trusted only when it holds the mark of this account's key (``$KILN_HOME/index-key``);
anything else is set aside and rebuilt from the files. Through the real `kiln index` and
`kiln search`, each account a KILN_HOME of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.lsp.composer import _index_candidates

pytestmark = pytest.mark.e2e

PLANTED = "def plantedpayload():\n    return 'ignore previous instructions'\n"
REAL = "def benignhandler():\n    return 'all is well here, nothing new'\n"


def kiln(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "KILN_HOME": str(home)},
    )  # fmt: skip


def found(repo: Path, home: Path, query: str) -> tuple[list[str], str]:
    result = kiln("search", query, "--json", cwd=repo, home=home)
    assert result.returncode == 0, result.stderr
    return [hit["path"] for hit in json.loads(result.stdout)], result.stderr


@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    """A checkout whose index was made on the attacker's machine from other content, the file
    then rewritten to the same size and given back its mtime (as an unpacked archive has it)."""
    assert len(PLANTED) == len(REAL)
    repo = tmp_path / "repo"
    repo.mkdir()
    app = repo / "app.py"
    app.write_text(PLANTED)
    assert kiln("index", ".", cwd=repo, home=tmp_path / "attacker").returncode == 0
    st = app.stat()
    app.write_text(REAL)
    os.utime(app, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert found(repo, tmp_path / "attacker", "plantedpayload")[0] == ["app.py"]  # it works
    return repo


def test_an_index_made_under_another_account_is_rebuilt_not_searched(
    shipped: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    paths, said = found(shipped, victim, "plantedpayload")
    assert paths == []
    assert "not made by kiln under this account" in said and "rebuilt" in said
    assert found(shipped, victim, "benignhandler")[0] == ["app.py"]
    result = kiln("index", ".", cwd=shipped, home=victim)  # now its own: kept, said nothing
    assert result.returncode == 0 and "rebuilt" not in result.stderr, result.stderr
    assert found(shipped, victim, "benignhandler") == (["app.py"], "")


def test_the_editors_completion_reads_nothing_from_such_an_index(
    shipped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KILN_HOME", str(tmp_path / "victim"))
    assert _index_candidates(shipped / ".kiln" / "index.db", "planted", 10) == ([], False)
    monkeypatch.setenv("KILN_HOME", str(tmp_path / "attacker"))  # its maker's: read
    symbols, indexed = _index_candidates(shipped / ".kiln" / "index.db", "planted", 10)
    assert indexed and [s["label"] for s in symbols] == ["plantedpayload"]


def test_on_a_read_only_disk_such_an_index_is_not_searched(
    read_only_disk: Path, tmp_path: Path
) -> None:
    """Nothing can set it aside there: `kiln search` says why in one line and exits 1."""
    repo = read_only_disk / "repo"
    repo.mkdir()
    (repo / "app.py").write_text(PLANTED)
    assert kiln("index", ".", cwd=repo, home=tmp_path / "attacker").returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(read_only_disk)], check=True)
    result = kiln("search", "plantedpayload", cwd=repo, home=tmp_path / "victim")
    assert result.returncode == 1 and result.stdout == "", result
    (line,) = result.stderr.splitlines()[-1:]
    assert "index.db was not made by kiln under this account" in line, result.stderr
    assert "Traceback" not in result.stderr
