"""What `kiln index` says about the files it leaves out, as README and its --help put it: a file
a search would miss (too big, a source file that is binary) is one line on stderr; binary data
and generated files are left out without a word. Both said every binary got a line, and a new
user who saw none for `logo.png` could not tell whether it was indexed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KILN_HOME": str(cwd.parent / "home")}
    return subprocess.run([sys.executable, "-m", "lsp_server", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_left_out_files_are_said_as_documented(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "big.txt").write_text("a" * 1_100_000)
    (work / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00data")
    (work / "tool.py").write_bytes(b"def f():\n    return '\x00'\n")
    (work / "ok.py").write_text("def g():\n    return 1\n")
    proc = kiln("index", ".", cwd=work)
    assert proc.returncode == 0, proc.stderr
    said = proc.stderr.splitlines()
    assert any("big.txt" in line for line in said) and any("tool.py" in line for line in said)
    assert not any("logo.png" in line for line in said), proc.stderr
    for text in (kiln("index", "--help", cwd=work).stdout, Path(__file__).parents[2].joinpath(
            "README.md").read_text()):  # fmt: skip
        flat = " ".join(text.split()).lower()
        assert "binary data" in flat and "without a word" in flat, flat[:400]
