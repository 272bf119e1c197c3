"""``bench/languages.py`` on a tree small enough to check by hand: the names it asks come
from its own regular expressions, one file each; the text arm unmaps the language only while
it runs; a bad tree argument is one ``error:`` line and exit 2."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "langs"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module("bench.languages")


def test_names_as_words_each_from_one_file(bench: ModuleType, tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "sample.zig", tmp_path / "counter.zig")
    asked = dict(bench.queries(tmp_path, "zig", 50, 1))
    assert asked["count words"] == "counter.zig"
    assert asked["word counter"] == "counter.zig"
    assert "init" not in asked  # one word: no navigational phrase


def test_both_arms_and_the_table_restored(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from indexer.languages import EXTENSIONS

    shutil.copy(FIXTURES / "sample.zig", tmp_path / "counter.zig")
    assert bench.main([f"zig={tmp_path}", "--queries", "10"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "zig" and cells[2] == "1"
    assert cells[3].startswith("0 → ")  # no definitions as text windows
    assert cells[6].endswith("→ 1.00")  # each name's file first with the grammar
    assert EXTENSIONS[".zig"] == "zig"


def test_a_bad_tree_is_one_error_line(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench.main([f"zig={tmp_path}", f"cobol={tmp_path}"]) == 2
    (line,) = capsys.readouterr().out.strip().splitlines()  # nothing before it
    assert line.startswith("error: cobol=")
