"""The task of a `--github-event` run (docs/ci.md): the comment body with a leading `/kiln` or
`@kiln` removed, else the issue or pull request — so a bare "/kiln" comment on an issue works
on that issue, instead of handing the model an empty request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ISSUE = {
    "number": 7,
    "title": "add_days subtracts",
    "body": "add_days(1, 2) returns -1",
    "author_association": "NONE",
    "user": {"login": "reporter"},
}


def task_of(tmp_path: Path, body: str, issue: dict = ISSUE) -> subprocess.CompletedProcess:
    """A real `kiln run --github-event` for a maintainer's comment ``body`` on ``issue``."""
    event = tmp_path / "event.json"
    comment = {"body": body, "author_association": "OWNER", "user": {"login": "maintainer"}}
    event.write_text(json.dumps({"comment": comment, "issue": issue}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--github-event", str(event),
         "--output-format", "json", "--mode", "yolo"],
        cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("body", ["/kiln", "@kiln  ", "/kiln:"])
def test_a_bare_mention_works_on_the_issue(tmp_path: Path, body: str) -> None:
    proc = task_of(tmp_path, body)
    assert proc.returncode == 0, proc.stderr
    task = json.loads(proc.stdout)["task"]
    assert task.startswith("Work on #7; its title and body, as its author wrote them:\n"), task
    assert "\nadd_days subtracts\n\nadd_days(1, 2) returns -1\n</external_content>" in task, task


def test_a_comment_with_words_is_the_task(tmp_path: Path) -> None:
    proc = task_of(tmp_path, "/kiln fix the date test")
    assert proc.returncode == 0, proc.stderr
    task = json.loads(proc.stdout)["task"]
    assert task == (  # the issue's title is its author's words: data
        "fix the date test\n\n(Context: comment on #7, whose title its author wrote:\n"
        '<external_content source="github:#7 title">\nadd_days subtracts\n</external_content>)'
    )
