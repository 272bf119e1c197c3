"""Real git repos for tests: one with a real failing pytest (harness, CI and editor tests),
and an empty one that takes commits of whole files (history and retrieval tests)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

CALC = '''def add(a, b):
    """Return the sum of a and b."""
    return a - b
'''

TEST_CALC = """from calc import add


def test_add():
    assert add(2, 3) == 5
"""


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def committing_repo(repo: Path) -> Callable[[str, dict[str, str]], None]:
    """A new git repository at ``repo`` on branch main; returns ``commit(message, files)``,
    which writes each file (relative path -> text) and commits them all."""
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)

    def commit(message: str, files: dict[str, str]) -> None:
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
        subprocess.run(
            ["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", message],
            cwd=repo,
            check=True,
        )

    return commit


def make_failing_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(TEST_CALC)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "test@kiln.invalid")
    git(root, "config", "user.name", "Kiln tests")
    git(root, "add", ".")
    git(root, "commit", "-qm", "initial")
    return root


PYTEST = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
