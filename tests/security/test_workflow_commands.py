"""Under GitHub Actions a step's log is read for workflow commands: a line whose first non-blank
characters are ``::`` (``::error::`` forges an annotation, ``::add-mask::`` hides text,
``::stop-commands::``, ``::add-matcher::`` with a file the agent wrote) and ``##[command]``
anywhere in a line. What `kiln run --ci` prints carries the model's text, file names and command
output: before, each went to the log as it was. Now no line of stdout or stderr is a command,
in text, json and stream-json output, a command split across streamed pieces included, and the
JSON still decodes to the text as it was. Through the real `kiln run --ci`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.security.scripted_run import tool_results

pytestmark = pytest.mark.e2e

# 16-character pieces (the scripted model's): the second line's "::" is split between two
ANSWER = (
    "Fixed it, see:\n:" + ":error file=calc.py,line=1::forged\n  ::add-mask::x ##[set-env name=A;]1"
    "\nand ##v"
    + "so[task.setvariable variable=PATH]/tmp/evil, ##VSO[task.complete result=Succeeded]"
)
NAME = "n\n::add-matcher::m.json.txt"


def workflow_commands(log: str) -> list[str]:
    """The lines the Actions runner would take as commands (v2 and its older ##[ form)."""
    lines = re.split(r"\r\n|\r|\n", log)
    return [line for line in lines if line.lstrip().startswith("::") or "##[" in line
            or "##vso[" in line.lower() or "##teamcity[" in line.lower()]  # fmt: skip


def run(
    repo: Path, tmp: Path, fmt: str, actions: bool = True, ci: str = "GITHUB_ACTIONS"
) -> subprocess.CompletedProcess:
    script = tmp / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "write_file", "input": {"path": NAME, "content": "x\n"}}]},
        {"tool_calls": [{"name": "run_command", "input": {
            "command": "printf '##[add-mask]hidden\\n::error::out\\n'; "
                       "printf 'x ##vso[task.setvariable variable=PATH]/tmp/evil\\n'"}}]},
        ANSWER,
    ]))  # fmt: skip
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    env.pop("GITHUB_ACTIONS", None)
    env.pop("TF_BUILD", None)
    env.pop("TEAMCITY_VERSION", None)
    if actions:
        env[ci] = {"GITHUB_ACTIONS": "true", "TF_BUILD": "True"}.get(ci, "2025.1")
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--artifacts", str(tmp / "out"),
         "--output-format", fmt, "--max-steps", "5", "go"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_no_line_of_the_log_is_a_workflow_command(
    failing_repo: Path, tmp_path: Path, fmt: str
) -> None:
    proc = run(failing_repo, tmp_path, fmt)
    assert proc.returncode == 10, proc.stderr
    assert workflow_commands(proc.stdout) == [] and workflow_commands(proc.stderr) == []
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    outputs = tool_results(Path(report["transcript"]))
    assert "##[add-mask]hidden" in json.dumps(outputs)  # the command did print it
    if fmt == "text":
        assert "Fixed it" in proc.stdout and "\\::error file=calc.py" in proc.stdout
        assert "n\\n::add-matcher::m.json.txt" in proc.stderr  # the file name, on one line
    else:
        last = json.loads(proc.stdout.splitlines()[-1] if fmt == "stream-json" else proc.stdout)
        assert last["result"] == ANSWER  # JSON: the same text, only written differently


def test_outside_actions_the_text_is_exact(failing_repo: Path, tmp_path: Path) -> None:
    proc = run(failing_repo, tmp_path, "text", actions=False)
    assert proc.returncode == 10, proc.stderr
    assert "\n::error file=calc.py,line=1::forged" in proc.stdout


@pytest.mark.parametrize("ci", ["TF_BUILD", "TEAMCITY_VERSION"])
@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_no_line_of_an_azure_or_teamcity_log_is_a_logging_command(
    failing_repo: Path, tmp_path: Path, fmt: str, ci: str
) -> None:
    """Azure Pipelines (``TF_BUILD=True``) reads ``##vso[…]`` and TeamCity ``##teamcity[…]``
    anywhere in a line: before, the answer or a command's output could set a variable of the
    later steps (``PATH``), upload a file or mark the task succeeded."""
    proc = run(failing_repo, tmp_path, fmt, ci=ci)
    assert proc.returncode == 10, proc.stderr
    assert workflow_commands(proc.stdout) == [] and workflow_commands(proc.stderr) == []
    if fmt == "text":
        assert "##vso\\[task.setvariable" in proc.stdout
    else:
        last = json.loads(proc.stdout.splitlines()[-1] if fmt == "stream-json" else proc.stdout)
        assert last["result"] == ANSWER
