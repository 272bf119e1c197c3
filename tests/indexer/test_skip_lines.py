"""What `kiln index` says of the files it leaves out, run after run (real `kiln index`, real
SQLite): each is one line when first met or when it changes; a later run that finds the same
ones counts them in one line, and `--verbose` lists them all again. Plain `kiln index` printed
every line on every run, so a new one was lost among the old."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import write
from .test_hostile_tree import clean, kiln

pytestmark = pytest.mark.e2e

BIG = "kiln: skipped big.py: larger than 1,000,000 bytes (1,080,000)"
LINK = "kiln: skipped one.py: the link leads outside the workspace"


def said(repo: Path, *options: str) -> list[str]:
    result = kiln("index", ".", *options, cwd=repo)
    clean(result)
    return result.stderr.splitlines()


def test_a_skipped_file_is_said_once_per_change(repo: Path, tmp_path: Path) -> None:
    write(tmp_path / "elsewhere", "shared.py", "def shared_symbol():\n    pass\n")
    write(repo, "ok.py", "def normal_symbol():\n    pass\n")
    (repo / "one.py").symlink_to(tmp_path / "elsewhere" / "shared.py")
    (repo / "big.py").write_text("def big_symbol():\n    pass\n" * 40_000)
    assert said(repo) == [BIG, LINK]
    again = "kiln: 2 files skipped as before (`kiln index --verbose` lists them)"
    assert said(repo) == [again]
    assert said(repo, "--verbose") == [BIG, LINK]
    assert said(repo) == [again]  # --verbose said them, and nothing changed
    (repo / "big.py").write_text("def big_symbol():\n    pass\n" * 40_001)  # a new size
    bigger = "kiln: skipped big.py: larger than 1,000,000 bytes (1,080,027)"
    assert said(repo) == [
        bigger,
        "kiln: 1 file skipped as before (`kiln index --verbose` lists them)",
    ]
    (repo / "big.py").unlink()
    (repo / "one.py").unlink()
    assert said(repo) == []
    (repo / "one.py").symlink_to(tmp_path / "elsewhere" / "shared.py")  # back: said again
    assert said(repo) == [LINK]
    summary = json.loads(kiln("index", ".", "--json", cwd=repo).stdout)
    assert summary["skipped"] == ["one.py: the link leads outside the workspace"]
    assert summary["skipped_before"] == ["one.py: the link leads outside the workspace"]


def test_a_minified_source_file_is_counted_and_listed_on_later_runs(repo: Path) -> None:
    """A source file left out as minified is read only when it changes: the next run neither
    counted it nor listed it with `--verbose` (README: a later run counts those it finds again,
    `--verbose` lists them), so `kiln index -v` showed one skipped file of two."""
    write(repo, "ok.py", "def normal_symbol():\n    pass\n")
    (repo / "big.py").write_text("def big_symbol():\n    pass\n" * 40_000)
    (repo / "min.js").write_text("x=1;" * 3000)
    minified = "kiln: skipped min.js: minified (lines of over 300 bytes on average)"
    assert said(repo) == [BIG, minified]
    again = "kiln: 2 files skipped as before (`kiln index --verbose` lists them)"
    assert said(repo) == [again]
    assert said(repo, "--verbose") == [BIG, minified]
    summary = json.loads(kiln("index", ".", "--json", cwd=repo).stdout)
    assert sorted(summary["skipped_before"]) == sorted(line[14:] for line in (BIG, minified))
    (repo / "min.js").write_text("y=2;" * 3000)  # changed: read again, said again
    assert said(repo) == [
        minified,
        "kiln: 1 file skipped as before (`kiln index --verbose` lists them)",
    ]


def test_a_left_out_file_touched_without_a_change_is_still_said_counted_and_listed(
    repo: Path,
) -> None:
    """`touch min.js` (a checkout, a formatter that changed nothing): its content hashed the
    same, so the run only stored the new mtime, and from then on the file was neither said,
    counted nor listed by `--verbose`; a search missed it unexplained."""
    write(repo, "ok.py", "def normal_symbol():\n    pass\n")
    (repo / "min.js").write_text("x=1;" * 3000)
    minified = "kiln: skipped min.js: minified (lines of over 300 bytes on average)"
    assert said(repo) == [minified]
    os.utime(repo / "min.js", ns=(0, (repo / "min.js").stat().st_mtime_ns + 10**9))
    assert said(repo) == [minified]  # its mtime changed: said as a change
    assert said(repo) == ["kiln: 1 file skipped as before (`kiln index --verbose` lists them)"]
    assert said(repo, "--verbose") == [minified]
