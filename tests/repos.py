"""A real git repo with a real failing pytest, shared by harness, CI and editor tests."""

from __future__ import annotations

import subprocess
import sys
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
