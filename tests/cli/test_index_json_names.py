"""`kiln index --json` and `kiln search --json` on a workspace whose folder name is not UTF-8:
every line is JSON of valid Unicode (the byte spelled ``\\xff``, as the text output spells
it), not a lone surrogate escape (``\\udcff``) that strict JSON readers refuse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def strict(line: bytes) -> object:
    """Parse as a strict reader would (one that refuses a lone surrogate)."""
    value = json.loads(line.decode("utf-8"))
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    return value


def test_a_root_whose_name_is_not_utf8_prints_valid_json(tmp_path: Path) -> None:
    root = Path(os.fsdecode(bytes(tmp_path) + b"/r\xff"))
    root.mkdir()
    (root / "calc.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    run = [sys.executable, "-m", "lsp_server"]
    index = subprocess.run([*run, "index", "--json"], cwd=root, capture_output=True, timeout=120)
    assert index.returncode == 0, index.stderr
    summary = strict(index.stdout)
    assert isinstance(summary, dict) and summary["root"].endswith("/r\\xff")
    assert summary["total_files"] == 1

    search = subprocess.run([*run, "search", "add numbers", "--json"], cwd=root,
                            capture_output=True, timeout=120)  # fmt: skip
    assert search.returncode == 0, search.stderr
    hits = strict(search.stdout)
    assert isinstance(hits, list) and hits[0]["path"] == "calc.py"


def test_kiln_run_in_such_a_root_names_the_folder(tmp_path: Path) -> None:
    """The session store takes UTF-8 text only: the run failed with "an argument or environment
    value is not valid UTF-8 text", naming neither the folder nor what to do."""
    root = Path(os.fsdecode(bytes(tmp_path) + b"/r\xff"))
    root.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    proc = subprocess.run([sys.executable, "-m", "lsp_server", "run", "--output-format", "json",
                           "go"], cwd=root, env=env, capture_output=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2
    line = proc.stderr.decode()
    assert json.loads(proc.stdout)["error"] == line.strip()[len("kiln: ") :]  # the result
    assert line.count("\n") == 1, line
    assert line.startswith(f"kiln: workspace {tmp_path}/r\\xff has a name that is not UTF-8")
