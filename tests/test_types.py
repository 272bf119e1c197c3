"""mypy over the packages pyproject.toml names: a type error fails the suite, not a later reader."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_packages_type_check() -> None:
    # the [tool.mypy] section of pyproject.toml picks the packages; the cache (.mypy_cache, not
    # committed) keeps a rerun to a few seconds
    done = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
