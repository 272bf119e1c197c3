"""Run by root (a CI container, a GitHub Actions `container:` job), bubblewrap handed the sandboxed
command every capability: `umount ~/.ssh` showed the key the sandbox hides, and `mount -o
remount,rw /` made the whole host writable. Through the real `kiln run --mode ci` (commands run
unasked), as root: neither works now (docs/security.md section 4)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

CANARY = "root-sandbox-canary-51c0"

pytestmark = [
    pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the capabilities bwrap keeps are root's"),
]


def test_a_command_run_by_root_cannot_undo_the_sandbox_mounts(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    home = host_dir / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(CANARY + "\n")
    root = home / "proj"
    root.mkdir()
    outside = host_dir / "outside.txt"
    command = (
        f"umount {home}/.ssh; cat {home}/.ssh/id_rsa; "
        f"mount -o remount,rw /; python3 -c \"open('{outside}', 'w')\"; "
        "grep CapEff /proc/self/status"  # (a write the permission check cannot read: the
        # sandbox is what must stop it; `touch` is refused before the command runs)
    )
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
        )  # fmt: skip
    )
    proc = kiln_run(
        root, home=home, kiln_home=kiln_home, script=script, mode="ci", output="stream-json"
    )
    results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
    assert "CapEff:\\t0000000000000000" in results, results  # the command ran, confined
    assert CANARY not in results + proc.stdout + proc.stderr
    assert not outside.exists()
