"""Who may start a CI run: `kiln run --github-event` (what action/run.sh calls) refuses actors
without write access and pull requests from forks, before any model call or command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def run_event(
    repo: Path, tmp: Path, event: dict, *, allowed: str = ""
) -> subprocess.CompletedProcess:
    path = tmp / "event.json"
    path.write_text(json.dumps(event))
    marker = tmp / "ran"
    script = tmp / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "run_command", "input": {"command": f"touch {marker}"}}]},
                "done",
            ]
        )
    )
    env = {
        **os.environ,
        "KILN_PROVIDER": "scripted",
        "KILN_SCRIPT": str(script),
        "KILN_ALLOWED_USERS": allowed,
    }
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--github-event", str(path), "--output-format", "json"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def comment(association: str, login: str = "someone") -> dict:
    return {
        "comment": {"body": "/kiln fix it", "author_association": association, "user": {"login": login}},
        "issue": {"number": 1, "title": "bug"},
        "sender": {"login": login},
    }  # fmt: skip


@pytest.fixture
def repo(failing_repo: Path) -> Path:
    return failing_repo


@pytest.mark.parametrize("association", ["NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", ""])
def test_outsiders_cannot_start_a_run(repo: Path, tmp_path: Path, association: str) -> None:
    proc = run_event(repo, tmp_path, comment(association, "mallory"))
    assert proc.returncode == 2
    assert "refusing a run started by @mallory" in proc.stderr
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR"])
def test_writers_can(repo: Path, tmp_path: Path, association: str) -> None:
    proc = run_event(repo, tmp_path, comment(association))
    assert proc.returncode in (0, 10, 11), proc.stderr
    assert "refusing" not in proc.stderr


def test_allow_list_admits_a_named_login_only(repo: Path, tmp_path: Path) -> None:
    assert (
        run_event(repo, tmp_path, comment("NONE", "Friend"), allowed="@friend, other").returncode
        != 2
    )
    proc = run_event(repo, tmp_path, comment("NONE", "friendly"), allowed="friend")
    assert proc.returncode == 2


def test_pull_request_from_a_fork_is_refused_even_for_a_member(repo: Path, tmp_path: Path) -> None:
    event = {
        "pull_request": {
            "number": 9, "title": "x", "body": "/kiln fix", "author_association": "MEMBER",
            "user": {"login": "m"},
            "head": {"repo": {"full_name": "mallory/proj", "fork": True}},
            "base": {"repo": {"full_name": "org/proj"}},
        }
    }  # fmt: skip
    proc = run_event(repo, tmp_path, event)
    assert proc.returncode == 2 and "from a fork" in proc.stderr
    assert not (tmp_path / "ran").exists()


def test_a_given_task_does_not_skip_the_check(repo: Path, tmp_path: Path) -> None:
    """action/run.sh passes both the task input and the event: the event still decides."""
    path = tmp_path / "event.json"
    path.write_text(json.dumps(comment("NONE", "mallory")))
    script = Path(__file__).resolve().parents[2] / "action" / "run.sh"
    env = {
        **os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(tmp_path / "none.json"),
        "GITHUB_EVENT_PATH": str(path), "KILN_TASK": "do it", "KILN_ARTIFACTS": str(tmp_path / "art"),
        "KILN_COMMAND": f"{sys.executable} -m lsp_server",
    }  # fmt: skip
    (tmp_path / "none.json").write_text("[]")
    env["GITHUB_OUTPUT"] = str(tmp_path / "github_output")
    proc = subprocess.run(
        ["bash", str(script)], cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "refusing a run started by @mallory" in proc.stderr
    # the step's outputs say what happened (before: outcome "failed" beside exit-code 2)
    outputs = (tmp_path / "github_output").read_text().splitlines()
    assert "exit-code=2" in outputs and "outcome=bad usage" in outputs
    assert not any(line.startswith("summary=") for line in outputs)
