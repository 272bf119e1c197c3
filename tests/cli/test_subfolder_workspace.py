"""`kiln memory`, `kiln mcp`, `kiln search` and `kiln index` from a subfolder of a repository
act on the workspace a `kiln run` started there uses: the repository root. They used the subfolder, so
`kiln memory show` showed memory a session there never starts with, `kiln mcp list` said no
servers were configured while the run would find the repository's server pending, and `kiln
search` built a second index of the subfolder alone and found nothing defined outside it (and
`kiln index` with no path refreshed that second one, not the one a search there reads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repos import git

ROOT = Path(__file__).resolve().parents[2]


def kiln(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "KILN.md").write_text("- the root's rule: run tox\n")
    (root / "pkg" / "KILN.md").write_text("- a package note\n")
    (root / ".kiln").mkdir()
    (root / ".kiln" / "mcp.json").write_text('{"mcpServers": {"db": {"command": "true"}}}')
    return root


def test_memory_from_a_subfolder_is_the_memory_a_run_there_starts_with(
    tmp_path: Path, repo: Path
) -> None:
    sub = repo / "pkg" / "sub"
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["ok"]))
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    sid = json.loads(kiln("run", "--output-format", "json", "hi", cwd=sub, env=env).stdout)[
        "session_id"
    ]
    sent = json.loads(kiln("context", "show", sid, "--json", cwd=sub).stdout)["request"]
    first = "".join(b.get("text", "") for b in sent["messages"][0]["content"])
    shown = kiln("memory", "show", cwd=sub).stdout
    assert "the root's rule" in shown and "the root's rule" in first
    assert ("a package note" in shown) == ("a package note" in first)
    assert kiln("memory", "path", cwd=sub).stdout.strip() == str(repo / "KILN.md")
    added = kiln("memory", "add", "keep it short", cwd=sub).stdout
    assert added.strip() == f"added to {repo / 'KILN.md'}"
    # --root still names a workspace of one's choosing
    assert kiln("memory", "path", "--root", ".", cwd=sub).stdout.strip() == str(sub / "KILN.md")


def test_mcp_from_a_subfolder_sees_and_approves_the_repositorys_servers(repo: Path) -> None:
    sub = repo / "pkg" / "sub"
    listed = json.loads(kiln("mcp", "list", "--json", cwd=sub).stdout)
    assert [(s["name"], s["status"]) for s in listed] == [("db", "pending")]
    kiln("mcp", "approve", "db", cwd=sub)
    at_root = json.loads(kiln("mcp", "list", "--json", cwd=repo).stdout)
    assert [(s["name"], s["status"], s["starts"]) for s in at_root] == [("db", "approved", True)]
    kiln("mcp", "revoke", "db", cwd=sub)
    assert json.loads(kiln("mcp", "list", "--json", cwd=repo).stdout)[0]["status"] == "pending"


def test_outside_a_repository_the_current_folder_is_the_workspace(tmp_path: Path) -> None:
    here = tmp_path / "plain"
    here.mkdir()
    assert kiln("memory", "path", cwd=here).stdout.strip() == str(here / "KILN.md")


def test_search_from_a_subfolder_searches_the_repository(repo: Path) -> None:
    (repo / "app").mkdir()
    (repo / "app" / "billing.py").write_text("def parse_invoice(text):\n    return text\n")
    (repo / "pkg" / "sub" / "util.py").write_text("def helper():\n    pass\n")
    sub = repo / "pkg" / "sub"
    hits = json.loads(kiln("search", "parse_invoice", "--json", cwd=sub).stdout)
    assert [(h["path"], h["name"]) for h in hits] == [("app/billing.py", "parse_invoice")]
    assert (repo / ".kiln" / "index.db").is_file()
    assert not (sub / ".kiln").exists(), "a second index was built for the subfolder"
    # --root still names a workspace of one's choosing: the subfolder alone
    alone = json.loads(kiln("search", "--root", ".", "parse_invoice", "--json", cwd=sub).stdout)
    assert alone == []
    helper = json.loads(kiln("search", "--root", ".", "helper", "--json", cwd=sub).stdout)
    assert [h["path"] for h in helper] == ["util.py"]


def test_index_without_a_path_from_a_subfolder_refreshes_the_repositorys_index(repo: Path) -> None:
    (repo / "app").mkdir()
    (repo / "app" / "billing.py").write_text("def parse_invoice(text):\n    return text\n")
    sub = repo / "pkg" / "sub"
    summary = json.loads(kiln("index", "--json", cwd=sub).stdout)
    assert summary["root"] == str(repo)
    assert not (sub / ".kiln").exists(), "a second index was built for the subfolder"
    # an explicit path is still that folder
    alone = json.loads(kiln("index", ".", "--json", cwd=sub).stdout)
    assert alone["root"] == str(sub)
