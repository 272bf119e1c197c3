"""``bench/component_edits.py`` on the Vue fixture: a row per file whose two arms gave the same
blocks on every edit; a file that is no component is one ``error:`` line and exit 2."""

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
    return importlib.import_module("bench.component_edits")


def test_a_row_per_component(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vue = shutil.copy(FIXTURES / "UserCard.vue", tmp_path / "UserCard.vue")
    assert bench.main([str(vue), "--edits", "5"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    grown = len((FIXTURES / "UserCard.vue").read_bytes()) + sum(
        len(f"  // note {i}\n") for i in range(5)
    )
    assert cells[:2] == ["UserCard.vue", str(grown)]


def test_a_file_that_is_no_component_is_one_error_line(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    js = shutil.copy(FIXTURES / "sample.js", tmp_path / "sample.js")
    assert bench.main([str(js)]) == 2
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith("error: ") and "sample.js" in line
