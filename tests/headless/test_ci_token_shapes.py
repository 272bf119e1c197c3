"""The prose outputs of `kiln run --ci` (summary.md, which a workflow posts as a comment,
report.json, the printed result and stream, the transcript, the commit message) lose each word
of a credential's shape, as stored sessions are shown; the patch carries the change as made."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.headless.test_run_ci import call, kiln

pytestmark = pytest.mark.e2e

GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # ghp_ + 36 letters and digits
SK = "sk-" + "proj4fG7hJ2kL9mN3pQ6rS8tV1wX5yZ0"
SCRIPT = [
    call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    call("run_command", command=f"echo the old key was {SK}"),
    {"text": f"Fixed add(). Rotate the token {GHP} and the key {SK} shown in the log."},
]


def outputs(tmp_path: Path) -> list[Path]:
    return [tmp_path / "out" / n for n in ("summary.md", "report.json", "transcript.jsonl")]


def leaked(text: str) -> list[str]:
    """Any piece of either key: a token split across streamed chunks showed its rest
    (``[REDACTED]l2M3n4O5p6Q7r8``) once its start was redacted alone."""
    return [
        k[i : i + 10] for k in (GHP, SK) for i in range(0, len(k) - 10, 5) if k[i : i + 10] in text
    ]


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_token_shaped_words_stay_out_of_the_ci_outputs(
    failing_repo: Path, tmp_path: Path, fmt: str
) -> None:
    proc = kiln(failing_repo, SCRIPT, "--ci",
                "--artifacts", str(tmp_path / "out"), "--commit-branch", "kiln/fix",
                "--output-format", fmt, f"fix add; the log had {GHP}")  # fmt: skip
    assert proc.returncode == 10, proc.stderr
    for path in outputs(tmp_path):
        text = path.read_text()
        assert not leaked(text), path.name
    assert "[REDACTED]" in (tmp_path / "out" / "summary.md").read_text()
    assert not leaked(proc.stdout) and not leaked(proc.stderr), proc.stdout + proc.stderr
    if fmt == "text":
        assert proc.stdout.startswith("Fixed add(). Rotate the token [REDACTED] and"), proc.stdout
    lines = proc.stdout.splitlines() if fmt == "stream-json" else [proc.stdout]
    assert fmt == "text" or json.loads(lines[-1])["result"].startswith(
        "Fixed add(). Rotate the token [REDACTED] and"
    )
    message = subprocess.run(["git", "log", "-1", "--format=%B", "kiln/fix"], cwd=failing_repo,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert not leaked(message) and "[REDACTED]" in message


def test_the_patch_carries_the_change_as_made(failing_repo: Path, tmp_path: Path) -> None:
    script = [call("edit_file", path="calc.py", old_text="return a - b",
                   new_text=f"return a + b  # {SK}"), {"text": "done"}]  # fmt: skip
    proc = kiln(failing_repo, script, "--ci", "--artifacts", str(tmp_path / "out"), "fix it")
    assert proc.returncode == 10, proc.stderr
    patch = (tmp_path / "out" / "changes.patch").read_text()
    assert f"+    return a + b  # {SK}" in patch
    subprocess.run(["git", "checkout", "-q", "--", "calc.py"], cwd=failing_repo, check=True)
    subprocess.run(["git", "apply", str(tmp_path / "out" / "changes.patch")], cwd=failing_repo,
                   check=True)  # fmt: skip
