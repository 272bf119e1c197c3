"""`KILN_DEBUG` is a switch like `KILN_CI` (README): `1`, `true`, `yes`, `on` print a bug's
traceback on stderr; `0`, `false`, `no`, `off` or empty keep it in a file the one line names.
Before, any value turned it on: `KILN_DEBUG=0` printed tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BUG = "import click\n\n@click.command()\ndef cmd():\n    raise RuntimeError('unforeseen')\n"
LINE = "kiln: internal error: RuntimeError: unforeseen"


def _bug(tmp_path: Path, debug: str) -> subprocess.CompletedProcess[str]:
    """`kiln boom`, a command registered as a plugin registers one, failing with a bug."""
    (tmp_path / "boom_cmd.py").write_text(BUG)
    code = (
        "import sys; from lsp_server.cli import main, register_command; "
        "register_command('boom', 'boom_cmd:cmd'); sys.exit(main(['boom']))"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]), "TMPDIR": str(tmp_path),
           "KILN_DEBUG": debug}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env},
        timeout=60, cwd=tmp_path,
    )  # fmt: skip


@pytest.mark.parametrize("off", ["0", "false", "No", " off ", ""])
def test_off_keeps_the_traceback_in_a_file(tmp_path: Path, off: str) -> None:
    proc = _bug(tmp_path, off)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"{LINE} (traceback in "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("on", ["1", "true", "YES", "on"])
def test_on_prints_the_traceback(tmp_path: Path, on: str) -> None:
    proc = _bug(tmp_path, on)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("Traceback") and proc.stderr.rstrip().endswith(LINE)


def test_another_value_is_refused_before_the_command_runs(tmp_path: Path) -> None:
    proc = _bug(tmp_path, "y")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "kiln: KILN_DEBUG must be 1 or 0 (true/false, yes/no, on/off), not 'y' "
        "(1 prints a bug's traceback on stderr)"
    ]
    assert not list(tmp_path.glob("kiln-crash-*"))  # the command never ran
