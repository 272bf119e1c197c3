"""A project's ``skills-lock.json`` that Kiln cannot use as it is, through the real `kiln`
process: a FIFO at the name is one line (not a hang), and a lockfile a newer Kiln wrote is
refused untouched instead of being rewritten without what the newer format added."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def one_line(proc: subprocess.CompletedProcess, code: int) -> str:
    assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kiln: "), proc.stderr
    return lines[0]


def test_a_fifo_lockfile_is_one_line_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "skills-lock.json")
    for args in (("verify",), ("remove", "acme/tool"), ("install", "--frozen")):
        line = one_line(kiln("skills", *args, "--root", str(tmp_path), cwd=tmp_path), 2)
        assert "skills-lock.json: not a regular file" in line


def test_a_lockfile_from_a_newer_kiln_is_refused_untouched(tmp_path: Path) -> None:
    lock = tmp_path / "skills-lock.json"
    text = (
        '{"lockfileVersion": 2, "skills": {"acme/tool": {"id": "acme/tool", "version": "1.0.0",'
        ' "futureField": "kept"}}}\n'
    )
    lock.write_text(text)
    for args in (("remove", "acme/tool", "--force"), ("install", "--frozen")):
        line = one_line(kiln("skills", *args, "--root", str(tmp_path), cwd=tmp_path), 2)
        assert "was written by a newer Kiln (lockfileVersion 2; this Kiln writes 1)" in line
    assert lock.read_text() == text
