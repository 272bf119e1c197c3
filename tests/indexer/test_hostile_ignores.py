"""Ignore files git can read but pathspec cannot compile, through the real `kiln index` and
`kiln search`: git skips a pattern it cannot parse and goes on with the rest, and so must the
index, in the full walk and in a one-file update (the watcher's, the editor's)."""

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

# Patterns pathspec refuses to compile: a trailing backslash, a reversed range.
UNPARSABLE = ["\\", "trailing\\", "[z-a]"]


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "KILN_HOME": str(cwd.parent / "home")},
    )  # fmt: skip


@pytest.mark.parametrize("pattern", UNPARSABLE)
def test_a_gitignore_line_that_cannot_be_parsed_is_dropped_not_fatal(
    repo: Path, pattern: str
) -> None:
    write(repo, ".gitignore", f"{pattern}\nskipped_*.py\n")
    write(repo, "sub/.ignore", f"{pattern}\n")
    write(repo, "kept.py", "def kept_symbol():\n    pass\n")
    write(repo, "sub/inner.py", "def inner_symbol():\n    pass\n")
    write(repo, "skipped_one.py", "def ignored_symbol():\n    pass\n")
    result = kiln("index", ".", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    hits = json.loads(kiln("search", "kept_symbol", "--json", cwd=repo).stdout)
    assert hits[0]["path"] == "kept.py"
    hits = json.loads(kiln("search", "inner_symbol", "--json", cwd=repo).stdout)
    assert hits[0]["path"] == "sub/inner.py"
    hits = json.loads(kiln("search", "ignored_symbol", "--json", cwd=repo).stdout)
    assert all(h["path"] != "skipped_one.py" for h in hits)  # the other patterns still count


def test_a_one_file_update_under_an_unparsable_gitignore_is_indexed(repo: Path) -> None:
    write(repo, ".gitignore", "[z-a]\n")
    write(repo, "first.py", "def first_symbol():\n    pass\n")
    idx = Index(repo)
    try:
        idx.update()
        write(repo, "later.py", "def later_symbol():\n    pass\n")
        idx.update_file(repo / "later.py")
        assert [h.path for h in idx.search("later_symbol", k=1)] == ["later.py"]
    finally:
        idx.close()


def test_a_gitignore_pattern_longer_than_a_path_is_dropped(repo: Path) -> None:
    """A pattern over 4,096 characters (a path's bound) is dropped: compiling one line of 1 MB
    held `kiln index` for 12 s at every read. Dropped, it ignores nothing: ``[b…]ugly.py``
    would have matched ``bugly.py``, which is indexed."""
    write(repo, ".gitignore", "[" + "bcdefgh" * 600 + "]ugly.py\nskipped_*.py\n")
    write(repo, "sub/.gitignore", "a" * 1_500_000)  # one line past the 1 MB read
    write(repo, "bugly.py", "def bugly_symbol():\n    pass\n")
    write(repo, "sub/inner.py", "def inner_symbol():\n    pass\n")
    write(repo, "skipped_one.py", "def ignored_symbol():\n    pass\n")
    result = kiln("index", ".", cwd=repo)
    assert result.returncode == 0, result.stderr
    hits = json.loads(kiln("search", "bugly_symbol", "--json", cwd=repo).stdout)
    assert hits[0]["path"] == "bugly.py"
    hits = json.loads(kiln("search", "inner_symbol", "--json", cwd=repo).stdout)
    assert hits[0]["path"] == "sub/inner.py"
    hits = json.loads(kiln("search", "ignored_symbol", "--json", cwd=repo).stdout)
    assert all(h["path"] != "skipped_one.py" for h in hits)
