"""Odd checkouts through the real `kiln index` / `kiln search`: ignore files that bring files
back, folders and links the index cannot follow, files too big or not source at all. Each
skip is one line on stderr, and the search answers what the files on disk hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexer import Index

from .conftest import write
from .test_hostile_tree import clean, kiln

pytestmark = pytest.mark.e2e


def found(repo: Path, word: str) -> list[str]:
    """The paths of the blocks named ``word`` that `kiln search` finds."""
    hits = json.loads(kiln("search", word, "--json", cwd=repo).stdout)
    return [h["path"] for h in hits if h["name"] == word]


def test_a_nested_gitignore_brings_back_what_one_above_ignored(repo: Path) -> None:
    """Git: the deepest `.gitignore` with a matching pattern decides. A folder's
    `!settings_local.py` was overruled by the root's `settings_*.py`: the file git tracks was
    missing from the index, in a full run and in a one-file update alike."""
    write(repo, ".gitignore", "settings_*.py\n")
    write(repo, "settings_dev.py", "def dev_setting():\n    pass\n")
    write(repo, "app/.gitignore", "!settings_local.py\n")
    write(repo, "app/settings_local.py", "def local_setting():\n    pass\n")
    write(repo, "app/settings_prod.py", "def prod_setting():\n    pass\n")
    write(repo, "app/deep/.gitignore", "settings_local.py\n")  # and deeper still, ignored again
    write(repo, "app/deep/settings_local.py", "def deep_setting():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    assert found(repo, "local_setting") == ["app/settings_local.py"]
    for word in ("dev_setting", "prod_setting", "deep_setting"):
        assert found(repo, word) == [], word
    write(repo, "app/settings_local.py", "def local_setting_edited():\n    pass\n")
    with Index(repo) as idx:
        assert idx.update_file("app/settings_local.py") == 1
        assert idx.update_file("app/deep/settings_local.py") == 0
