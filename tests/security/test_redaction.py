"""`kiln run --ci` redacts secret-looking environment values (docs/ci.md): a value the model read
from a file, wrote into a file and repeated in its answer appears in no output and no artifact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SECRET = "canary-redact-7f3a91c2"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo,
                   check=True, capture_output=True)  # fmt: skip


@pytest.mark.parametrize("output_format", ["json", "stream-json", "text"])
def test_ci_outputs_and_artifacts_never_carry_a_secret_value(
    tmp_path: Path, kiln_home: Path, output_format: str
) -> None:
    """In every output format: streamed, the answer reaches stdout in chunks, and the secret
    (longer than a chunk) is split across two of them; the edit event carries the file's text."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "conf.txt").write_text(f"value={SECRET}\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "read_file", "input": {"path": "conf.txt"}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "leak.txt", "content": SECRET}}]},
        {"tool_calls": [{"name": "edit_file", "input": {"path": "conf.txt", "old_text": "value",
                                                        "new_text": "VALUE"}}]},
        f"The value is {SECRET}.",
    ]))  # fmt: skip
    artifacts = tmp_path / "out"
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "MY_SERVICE_TOKEN": SECRET}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--no-sandbox", "--artifacts",
         str(artifacts), "--output-format", output_format, "go"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 10, proc.stderr  # changed, no --verify
    assert (repo / "leak.txt").read_text() == SECRET  # the workspace file itself is the model's
    outputs = {"stdout": proc.stdout, "stderr": proc.stderr}
    for name in ("changes.patch", "summary.md", "report.json", "transcript.jsonl"):
        outputs[name] = (artifacts / name).read_text()
    leaked = [name for name, text in outputs.items() if SECRET in text]
    assert leaked == [], leaked
    assert "[REDACTED:MY_SERVICE_TOKEN]" in outputs["changes.patch"]
    assert "[REDACTED:MY_SERVICE_TOKEN]" in outputs["transcript.jsonl"]
    assert "[REDACTED:MY_SERVICE_TOKEN]" in proc.stdout
    if output_format == "json":
        assert "[REDACTED:MY_SERVICE_TOKEN]" in json.loads(proc.stdout)["result"]
    if output_format == "stream-json":
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        answer = "".join(e["text"] for e in lines if e["type"] == "text_delta")
        assert answer == "The value is [REDACTED:MY_SERVICE_TOKEN]."


def test_the_ci_mode_redacts_without_the_ci_flag(tmp_path: Path, kiln_home: Path) -> None:
    """`kiln run --mode ci` (CI's policy, without --ci's patch and summary) printed a value the
    model read from a file as it was: only --ci turned redaction on."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "conf.txt").write_text(f"value={SECRET}\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "read_file", "input": {"path": "conf.txt"}}]},
        f"The value is {SECRET}.",
    ]))  # fmt: skip
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "MY_SERVICE_TOKEN": SECRET}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "ci", "--output-format",
         "stream-json", "go"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout
    assert proc.stdout.count("[REDACTED:MY_SERVICE_TOKEN]") >= 2  # the file read, the answer


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_a_secret_in_the_task_is_redacted_from_the_report(
    tmp_path: Path, kiln_home: Path, output_format: str
) -> None:
    """A build log given as the task (`tail -200 build.log | kiln run --ci -`) can hold a value a
    test printed; the transcript had it redacted, but the report's `task` (stdout, report.json)
    and the summary's quote of the task carried it as written."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Nothing to change."]))
    log = tmp_path / "build.log"
    log.write_text(f"FAILED test_login: token={SECRET} rejected\n")
    artifacts = tmp_path / "out"
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "MY_SERVICE_TOKEN": SECRET}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--no-sandbox", "--artifacts",
         str(artifacts), "--output-format", output_format, "--task-file", str(log)],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 11, proc.stderr  # nothing changed
    result = json.loads(
        proc.stdout.splitlines()[-1] if output_format == "stream-json" else proc.stdout
    )
    assert result["task"] == "FAILED test_login: token=[REDACTED:MY_SERVICE_TOKEN] rejected\n"
    outputs = {"stdout": proc.stdout, "stderr": proc.stderr}
    for name in ("summary.md", "report.json", "transcript.jsonl"):
        outputs[name] = (artifacts / name).read_text()
    assert [name for name, text in outputs.items() if SECRET in text] == []
    assert "[REDACTED:MY_SERVICE_TOKEN]" in outputs["summary.md"]
