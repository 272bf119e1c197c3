"""A search query the repository can dictate (docs/security.md, "The code index"): text in a
checkout can tell the model what to search for, and a pasted log is a query too. One of
100 kB — thousands of words, or one word of 100,000 characters — passed SQLite's limits
("Expression tree is too large", "LIKE or GLOB pattern too complex"): `kiln search` ended in a
traceback and `search_code` failed. Through the real `kiln search` and `kiln run`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run_json, tool_results

pytestmark = pytest.mark.e2e

MANY_WORDS = "parse_settings_file " + " ".join(f"w{i}xyz" for i in range(12_000))
LONG_WORD = "parse_settings_file " + "abc_def" * 14_000
SYNTAX = 'parse_settings_file NEAR( "path": * ^x {path} OR AND NOT ' * 1_500


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "settings.py").write_text("def parse_settings_file(path):\n    return path\n")
    return root


@pytest.mark.parametrize("query", [MANY_WORDS, LONG_WORD, SYNTAX], ids=["words", "word", "syntax"])
def test_kiln_search_answers_a_100_kb_query(tmp_path: Path, kiln_home: Path, query: str) -> None:
    root = _repo(tmp_path)
    assert len(query.encode()) > 80_000
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "search", "--root", str(root), "--", query],
        capture_output=True, text=True, timeout=120, env={**os.environ, "KILN_HOME": str(kiln_home)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.startswith("settings.py:1-2  function parse_settings_file")


def test_search_code_answers_a_query_a_file_dictated(tmp_path: Path, kiln_home: Path) -> None:
    root = _repo(tmp_path)
    step = {"tool_calls": [{"name": "search_code", "input": {"query": MANY_WORDS}}]}
    _, out = kiln_run_json(
        root, [step], home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    (result,) = tool_results(Path(out["transcript"]))
    assert "parse_settings_file" in result and "settings.py" in result
    assert "Expression tree" not in result and "error" not in result.lower()
