"""A link inside the workspace to what the index leaves out by its real path: a checkout can
ship ``notes.txt -> .env`` or ``meta -> .git``, and the user's own secrets (a token in the
ignored ``.env``, a credential in ``.git/config``) were indexed under the link's name and found
by `kiln search` and the agent's `search_code`. Through the real `kiln index` / `kiln search`,
and the one-file update the watcher and the editor use."""

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

SECRET = "livesecretvalue"


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "KILN_HOME": str(cwd.parent / "home")},
    )  # fmt: skip


def found(repo: Path, query: str) -> list[str]:
    result = kiln("search", query, "--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    return [hit["path"] for hit in json.loads(result.stdout)]


@pytest.fixture
def checkout(repo: Path) -> Path:
    """The user's secrets where the index never looks, and a checkout's links to them."""
    (repo / ".git").mkdir()
    write(repo, ".git/config", f'[remote "origin"]\n  url = https://u:{SECRET}1@example.com/r\n')
    write(repo, ".env", f"API_TOKEN={SECRET}2\n")
    write(repo, "local/creds.txt", f"password {SECRET}3\n")
    write(repo, "node_modules/pkg/dep.py", "def vendoredthing():\n    pass\n")
    write(repo, ".gitignore", ".env\nlocal/\n")
    write(repo, "app.py", "def appmain():\n    pass\n")
    os.symlink(".env", repo / "notes.txt")
    os.symlink(".git", repo / "meta")
    os.symlink("local/creds.txt", repo / "creds.txt")
    os.symlink("local", repo / "shared")
    os.symlink("node_modules", repo / "lib")
    return repo


def test_links_to_skipped_dotted_or_ignored_paths_are_not_followed(checkout: Path) -> None:
    result = kiln("index", ".", cwd=checkout)
    assert result.returncode == 0, result.stderr
    assert found(checkout, "appmain") == ["app.py"]
    for n in "123":
        assert found(checkout, SECRET + n) == []
    assert "vendoredthing" not in kiln("search", "vendoredthing", cwd=checkout).stdout


def test_a_one_file_update_through_such_a_link_indexes_nothing(checkout: Path) -> None:
    with Index(checkout) as idx:
        idx.update()
        for rel in ("notes.txt", "meta/config", "creds.txt", "shared/creds.txt"):
            assert idx.update_file(checkout / rel) == 0
        assert [h.path for h in idx.search(SECRET + "2")] == []
        assert [h.path for h in idx.search(SECRET + "1")] == []
        assert [h.path for h in idx.search(SECRET + "3")] == []
        assert [h.path for h in idx.search("appmain", k=1)] == ["app.py"]
