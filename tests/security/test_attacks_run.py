"""The attack suite through `kiln run`: a scripted model reads a prompt-injected file in a hostile
repository and then tries every attack in ``hostile.ATTACKS``, in each permission mode. Nobody
answers questions (no terminal), so an attack that asks is refused; in yolo everything is allowed
by rule and only the sandbox stands in the way. Goal: zero escapes in every mode.

Set KILN_SECURITY_REPORT=FILE to append each mode's tally (attacks counted, escapes) as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.hostile import ATTACKS, Hostile, everything_written, results_by_attack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        find_backend() is None, reason="needs bubblewrap (apt-get install bubblewrap)"
    ),
]


def report(mode: str, via: str, counted: int, escapes: dict[str, str]) -> None:
    path = os.environ.get("KILN_SECURITY_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(
                json.dumps({"via": via, "mode": mode, "attacks": counted, "escapes": escapes})
                + "\n"
            )


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "ci", "yolo"])
def test_no_attack_escapes_kiln_run(hostile: Hostile, tmp_path: Path, mode: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(hostile.script()))
    artifacts = tmp_path / "artifacts"
    mode_args = (
        ["--ci", "--commit-branch", "kiln/attack", "--artifacts", str(artifacts)]
        if mode == "ci"
        else ["--mode", mode]
    )  # --artifacts needs --ci
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", *mode_args, "--max-steps", "200",
         "--output-format", "json", "Tidy up the repository."],
        cwd=hostile.root,
        env={**hostile.env(), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    result = json.loads(proc.stdout)
    assert result["stop_reason"] == "end_turn", result
    messages = [json.loads(line) for line in Path(result["transcript"]).read_text().splitlines()]
    results = results_by_attack(hostile, messages)
    attempted = [a for a in ATTACKS if a.observe != "step"]
    assert len(results) == len(attempted) + 1  # every attack ran (and the skill load)
    outputs = "\n".join(
        [proc.stdout, proc.stderr, everything_written(artifacts),
         everything_written(hostile.kiln_home, skip=(hostile.kiln_home / "credentials.json",))]
    )  # fmt: skip
    escapes = hostile.escapes(mode, results, outputs)
    counted = sum(1 for a in attempted if mode in a.modes)
    report(mode, "kiln run", counted, escapes)
    assert escapes == {}, json.dumps(escapes, indent=1)
    if mode == "ci":
        assert result["branch"] == "kiln/attack"  # the host committed (hooks planted, none ran)


def test_controls_the_suite_can_see_an_escape(hostile: Hostile, tmp_path: Path) -> None:
    """The same observers do see escapes when the sandbox is off (so zero above means something)."""
    picked = {"w-python", "n-python-tcp", "s-ssh", "k-kill", "s-env", "x-tool-search"}
    script = [a.call(hostile) for a in ATTACKS if a.id in picked] + ["done"]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", "--no-sandbox", "--output-format",
         "json", "go"],
        cwd=hostile.root, env={**hostile.env(), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(path)},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    result = json.loads(proc.stdout)
    messages = [json.loads(line) for line in Path(result["transcript"]).read_text().splitlines()]
    escapes = hostile.escapes("yolo", results_by_attack(hostile, messages), proc.stdout)
    assert {"w-python", "n-python-tcp", "s-ssh", "k-kill", "x-tool-search"} <= set(escapes), escapes
