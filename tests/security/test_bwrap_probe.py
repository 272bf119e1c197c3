"""A bubblewrap too old for `--cap-drop` (before 0.3) passed the start-up probe, which did not
use that option, and then failed every command with `bwrap: Unknown option --cap-drop`: a
confusing tool error per call, and in `ci` a run whose every command "failed" for no reason the
model could act on. Through the real `kiln run` with such a bwrap (a wrapper around the real one
that refuses the option): the probe counts it as no sandbox, so `ci` refuses commands with the
one line docs/security.md section 4 gives, naming the missing option, and the other modes say
once that commands are unconfined and why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

REAL = shutil.which("bwrap")
pytestmark = pytest.mark.skipif(REAL is None, reason="needs bubblewrap")


def old_bwrap(folder: Path) -> Path:
    exe = folder / "old-bwrap"
    exe.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do\n'
        '  case "$a" in --cap-drop|--cap-add) echo "bwrap: Unknown option $a" >&2; exit 1;; esac\n'
        "done\n"
        f'exec {REAL} "$@"\n'
    )
    exe.chmod(0o755)
    return exe


def run(tmp_path: Path, kiln_home: Path, host_dir: Path, mode: str) -> tuple[str, str]:
    home = host_dir / "home"
    root = home / "proj"
    root.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": "echo ran-$((6*7))"}}]},
         "done"]
    ))  # fmt: skip
    proc = kiln_run(
        root, home=home, kiln_home=kiln_home, script=script, mode=mode, output="stream-json",
        env={"KILN_BWRAP": str(old_bwrap(tmp_path))},
    )  # fmt: skip
    results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
    return results, proc.stdout


def test_ci_refuses_commands_with_a_bwrap_that_cannot_drop_capabilities(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    results, _ = run(tmp_path, kiln_home, host_dir, "ci")
    assert "ran-42" not in results, results
    assert "Unknown option" not in results, results
    assert "commands are refused: the ci mode runs commands unasked" in results, results
    assert "--cap-drop" in results, results


def test_other_modes_say_why_commands_are_unconfined(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    results, events = run(tmp_path, kiln_home, host_dir, "yolo")
    assert "ran-42" in results and "Unknown option" not in results, results
    assert "commands are unconfined" in events and "--cap-drop" in events, events
