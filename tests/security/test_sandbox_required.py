"""The `ci` mode runs every understood command without asking anyone: only the sandbox holds it.
`kiln run --ci` refused commands when no sandbox works here, but `kiln run --mode ci` (and an
editor session in `ci`) ran them unconfined, so a command wrote outside the workspace with
nobody asked. Through the real `kiln run --mode ci` with no bubblewrap (docs/security.md
section 4): refused with one line; `--no-sandbox` is the user's explicit choice."""

from __future__ import annotations

import json
from pathlib import Path

from tests.security.scripted_run import kiln_run, stream_transcript, tool_results


def run(tmp_path: Path, kiln_home: Path, host_dir: Path, *extra: str) -> tuple[Path, str]:
    home = host_dir / "home"
    root = home / "proj"
    root.mkdir(parents=True, exist_ok=True)
    outside = host_dir / "outside.txt"
    script = tmp_path / "script.json"
    # a write the permission check cannot read from the line (`touch` is refused before it
    # runs): what holds it is the sandbox, or nothing
    command = f"python3 -c \"open('{outside}', 'w')\" && echo ran"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
    ))  # fmt: skip
    proc = kiln_run(
        root, home=home, kiln_home=kiln_home, script=script, mode="ci", output="stream-json",
        extra=extra, env={"KILN_BWRAP": str(tmp_path / "no-bwrap")},
    )  # fmt: skip
    results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
    return outside, results


def test_the_ci_mode_refuses_commands_without_a_sandbox(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    outside, results = run(tmp_path, kiln_home, host_dir)
    assert not outside.exists(), results
    assert "commands are refused: the ci mode runs commands unasked" in results, results


def test_no_sandbox_is_the_users_explicit_choice(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    outside, results = run(tmp_path, kiln_home, host_dir, "--no-sandbox")
    assert outside.exists() and "ran" in results, results
