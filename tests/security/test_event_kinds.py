"""Events that carry no ``author_association`` (docs/ci.md, "Who may start a run"): running the
workflow by hand, a schedule, a push, a repository_dispatch — each only someone with write
access (or the repository itself) can start — run; so does a ``workflow_run`` that followed a
run of this repository's own code, while one that followed a fork's pull request, and anything
else without an author, is refused. Before, every one of them was refused as "author_association
unknown", the documented example workflow's ``workflow_dispatch`` included. A pull request whose
head repository is gone (a deleted fork) is a fork's. Through the real `kiln run --ci`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = {"full_name": "org/app", "fork": False}
SENDER = {"login": "someone"}
DISPATCH = {"inputs": {"task": "fix it"}, "ref": "refs/heads/main", "workflow": "k.yml",
            "repository": REPO, "sender": SENDER}  # fmt: skip
SCHEDULE = {"schedule": "0 3 * * *", "repository": REPO}
PUSH = {"ref": "refs/heads/main", "pusher": {"name": "m"}, "repository": REPO, "sender": SENDER}


def workflow_run(head: str, event: str = "pull_request") -> dict:
    run = {"event": event, "conclusion": "failure", "head_repository": {"full_name": head},
           "head_branch": "topic"}  # fmt: skip
    return {"action": "completed", "workflow_run": run, "repository": REPO, "sender": SENDER}


def run_kiln(
    repo: Path, tmp: Path, event: dict, name: str = "", task: str | None = "fix the build"
) -> subprocess.CompletedProcess:
    path = tmp / "event.json"
    path.write_text(json.dumps(event))
    marker = tmp / "ran"
    script = tmp / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "run_command", "input": {"command": f"touch {marker}"}}]},
        "done",
    ]))  # fmt: skip
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "GITHUB_EVENT_NAME": name, "KILN_ALLOWED_USERS": ""}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--github-event", str(path),
         "--output-format", "json", "--no-sandbox", *([task] if task else [])],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("event", "name"),
    [(DISPATCH, "workflow_dispatch"), (DISPATCH, ""), (SCHEDULE, "schedule"), (PUSH, ""),
     (workflow_run("org/app"), "workflow_run"), (workflow_run("org/app", "push"), "")],
)  # fmt: skip
def test_events_only_writers_start_run(
    failing_repo: Path, tmp_path: Path, event: dict, name: str
) -> None:
    proc = run_kiln(failing_repo, tmp_path, event, name)
    assert proc.returncode == 11, proc.stderr  # ran, changed nothing in the checkout
    assert "refusing" not in proc.stderr and (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    ("event", "name", "why"),
    [
        (workflow_run("mallory/app"), "workflow_run", "author_association unknown"),
        ({**workflow_run("org/app"), "workflow_run": {"event": "pull_request"}}, "", "unknown"),
        ({"action": "created", "check_run": {}, "sender": SENDER}, "check_run", "unknown"),
        # a member's old "/kiln" comment, deleted: not a request to run it again
        ({"action": "deleted", "comment": {"body": "/kiln fix", "author_association": "MEMBER",
                                           "user": {"login": "m"}}, "issue": {"number": 3}},
         "issue_comment", "a deleted comment"),
        # a name that says push cannot lend trust to a comment without an association
        ({"comment": {"body": "/kiln x"}, "issue": {"number": 1}, "sender": SENDER}, "", "unknown"),
        ({"pull_request": {"number": 2, "title": "x", "author_association": "MEMBER",
                           "user": {"login": "m"}, "head": {"repo": None},
                           "base": {"repo": REPO}}}, "pull_request_target", "from a fork"),
    ],
)  # fmt: skip
def test_other_events_are_refused(
    failing_repo: Path, tmp_path: Path, event: dict, name: str, why: str
) -> None:
    proc = run_kiln(failing_repo, tmp_path, event, name)
    assert proc.returncode == 2 and why in proc.stderr, proc.stderr
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    ("event", "names"),
    [
        ({"comment": "x", "issue": {"number": 1}}, "'comment' is not an object"),
        ({"comment": {"body": 5, "author_association": "OWNER"}}, "'comment.body' is not a string"),
        ({"pull_request": {"head": "x", "author_association": "OWNER", "title": "t"}},
         "'pull_request.head' is not an object"),
        ({"pull_request": {"head": {"repo": "org/app"}, "author_association": "OWNER"}},
         "'pull_request.head.repo' is not an object"),
        ({"comment": {"body": "/kiln go", "author_association": ["OWNER"], "user": "bob"}},
         "'comment.author_association' is not a string"),
    ],
)  # fmt: skip
def test_an_event_file_of_another_shape_is_one_line(
    failing_repo: Path, tmp_path: Path, event: dict, names: str
) -> None:
    """Before, each of these was an internal error (exit 1, a traceback file)."""
    proc = run_kiln(failing_repo, tmp_path, event)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and names in proc.stderr
    assert not (tmp_path / "ran").exists()


def test_a_failed_build_is_the_task(failing_repo: Path, tmp_path: Path) -> None:
    """The action runs "on a failing build" with no task input: before, a workflow_run event
    gave no task (exit 2, "no task found"). Now the failed run is the task."""
    event = workflow_run("org/app", "push")
    event["workflow_run"].update(
        name="Tests", head_sha="0123456789abcdef0123", conclusion="failure"
    )
    proc = run_kiln(failing_repo, tmp_path, event, "workflow_run", task=None)
    assert proc.returncode == 11, proc.stderr
    task = json.loads(proc.stdout)["task"]
    assert task == ('The "Tests" workflow failed on topic at 0123456789ab. '
                    "Find the cause in this checkout and fix it.")  # fmt: skip
    event["workflow_run"]["conclusion"] = "success"
    proc = run_kiln(failing_repo, tmp_path, event, "workflow_run", task=None)
    assert proc.returncode == 2 and "no task found" in proc.stderr


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"[" * 100_000, "is not usable JSON: JSON nested deeper than"),
        (b'{"comment": {"body": "caf\xe9"}}', "is not UTF-8 text (byte 0xe9 at offset 25)"),
    ],
)
def test_an_event_file_that_is_not_json_github_writes_is_one_line(
    failing_repo: Path, tmp_path: Path, content: bytes, why: str
) -> None:
    """An event file nested deeper than the parser's stack ended in an internal error (exit 1,
    a traceback file); one in another encoding said "a file Kiln read is not valid UTF-8" without
    naming it."""
    path = tmp_path / "event.json"
    path.write_bytes(content)
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--github-event", str(path), "go"],
        cwd=failing_repo, capture_output=True, text=True, timeout=120,
        env={**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(tmp_path / "none")},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"kiln: GitHub event file {path} {why}"), proc.stderr
    assert proc.stderr.count("\n") == 1
