"""The GitHub Action's shell steps, run for real: action/run.sh in a git repo with the scripted
model, and action/post-comment.sh against a local HTTP server standing in for the GitHub API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.repos import PYTEST

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def test_run_script_fixes_and_publishes_outputs(failing_repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {
                    "tool_calls": [
                        {
                            "name": "edit_file",
                            "input": {
                                "path": "calc.py",
                                "old_text": "return a - b",
                                "new_text": "return a + b",
                            },
                        }
                    ]
                },
                {"tool_calls": [{"name": "run_command", "input": {"command": PYTEST}}]},
                "Fixed the sign in add().",
            ]
        )
    )
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "comment": {"body": "/kiln fix the add test", "author_association": "OWNER"},
                "issue": {"number": 3, "title": "t"},
            }
        )
    )
    output, step_summary = tmp_path / "github_output", tmp_path / "step_summary.md"
    env = {
        **os.environ,
        "KILN_PROVIDER": "scripted",
        "KILN_SCRIPT": str(script),
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(step_summary),
        "KILN_VERIFY": PYTEST,
        "KILN_COMMIT_BRANCH": "kiln/fix",
        "KILN_ARTIFACTS": str(tmp_path / "art"),
        "KILN_COMMAND": f"{sys.executable} -m lsp_server",
    }
    proc = subprocess.run(
        ["bash", str(REPO / "action" / "run.sh")],
        cwd=failing_repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["exit-code"] == "0" and outputs["outcome"] == "ok"
    assert Path(outputs["patch"]).read_text().count("+    return a + b") == 1
    assert "Kiln: ok" in step_summary.read_text()
    branches = subprocess.run(
        ["git", "branch", "--list", "kiln/fix"], cwd=failing_repo, capture_output=True, text=True
    ).stdout
    assert "kiln/fix" in branches


def test_run_script_fails_the_step_on_provider_error(failing_repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"raise": "unavailable"}]))
    env = {
        **os.environ,
        "KILN_PROVIDER": "scripted",
        "KILN_SCRIPT": str(script),
        "KILN_TASK": "do it",
        "KILN_ARTIFACTS": str(tmp_path / "art"),
        "KILN_COMMAND": f"{sys.executable} -m lsp_server",
        "GITHUB_OUTPUT": str(tmp_path / "out"),
    }
    proc = subprocess.run(
        ["bash", str(REPO / "action" / "run.sh")],
        cwd=failing_repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 4
    assert "exit-code=4" in (tmp_path / "out").read_text()


class _Recorder(BaseHTTPRequestHandler):
    received: list[tuple[str, dict, dict]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Recorder.received.append((self.path, dict(self.headers), body))
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


def test_post_comment_script_posts_the_summary(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        summary = tmp_path / "summary.md"
        summary.write_text("## Kiln: ok\n\nFixed it — with “quotes”.\n")
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"pull_request": {"number": 42, "title": "x"}}))
        env = {
            **os.environ,
            "KILN_SUMMARY": str(summary),
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_API_URL": f"http://127.0.0.1:{server.server_port}",
            "GITHUB_REPOSITORY": "acme/app",
            "GITHUB_TOKEN": "t0ken",
        }
        proc = subprocess.run(
            ["bash", str(REPO / "action" / "post-comment.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        path, headers, body = _Recorder.received[-1]
        assert path == "/repos/acme/app/issues/42/comments"
        assert headers["Authorization"] == "Bearer t0ken"
        assert body["body"] == summary.read_text()
    finally:
        server.shutdown()
        server.server_close()


def test_action_yml_is_a_composite_action_calling_the_tested_scripts() -> None:
    import yaml

    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    runs = " ".join(step.get("run", "") for step in action["runs"]["steps"])
    assert "action/run.sh" in runs and "action/post-comment.sh" in runs
    assert {"exit-code", "summary", "patch"} <= set(action["outputs"])
