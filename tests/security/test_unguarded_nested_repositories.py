"""A workspace holding more of the user's nested repositories than the sandbox guards (the first
50 per repository, 3 levels deep: docs/security.md, known limits), through the real `kiln run`.
The config and hooks of those past the bound are not read-only to commands, and the user's next
`git status` runs git in them on the host; nothing said so. The session now says how many are
left out, in one status line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.nested_repos import COMMIT, nested_repositories
from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def workspace(tmp_path: Path, nested: int) -> Path:
    """A repository recording ``nested`` repositories of its own, each with a commit."""
    root = tmp_path / "ws"
    root.mkdir()
    nested_repositories(root, nested)
    subprocess.run(["git", *COMMIT, "top"], cwd=root, check=True)
    return root


def said(tmp_path: Path, kiln_home: Path, root: Path) -> list[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, output="text")
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stderr.splitlines() if "not guarded" in line]


def test_nested_repositories_past_the_bound_are_said(tmp_path: Path, kiln_home: Path) -> None:
    lines = said(tmp_path, kiln_home, workspace(tmp_path, 55))
    assert len(lines) == 1, lines
    assert lines[0].startswith("sandbox: 5 nested repositories past the first 50 "), lines


def test_nested_repositories_within_the_bound_say_nothing(tmp_path: Path, kiln_home: Path) -> None:
    assert said(tmp_path, kiln_home, workspace(tmp_path, 3)) == []
