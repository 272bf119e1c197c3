"""The action's scripts on a job whose PATH has no python3 (a `container:` job on a node or
distroless image; action.yml's setup-python leaves the job's PATH alone): they use Kiln's own
Python (KILN_PYTHON). Before, a fixed run reported the outcome "failed" and the comment step
failed to read the event."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.headless.test_action import REPO, _Recorder

pytestmark = pytest.mark.e2e

TOOLS = ["bash", "sh", "mkdir", "mktemp", "cat", "git", "curl", "env"]


def bare_path(tmp_path: Path) -> str:
    """A PATH with the shell tools the scripts use, and no python."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_the_action_runs_and_comments_without_python_on_path(
    failing_repo: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Nothing to change."]))
    output, art = tmp_path / "github_output", tmp_path / "art"
    env = {**os.environ, "PATH": bare_path(tmp_path), "KILN_PYTHON": sys.executable,
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script), "KILN_TASK": "look",
           "KILN_ARTIFACTS": str(art), "GITHUB_OUTPUT": str(output),
           "KILN_COMMAND": f"{sys.executable} -m lsp_server"}  # fmt: skip
    proc = subprocess.run([shutil.which("bash") or "bash", str(REPO / "action" / "run.sh")],
                          cwd=failing_repo, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["exit-code"] == "11" and outputs["outcome"] == "nothing to do"

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"issue": {"number": 7, "title": "x"}}))
        env |= {"KILN_SUMMARY": outputs["summary"], "GITHUB_EVENT_PATH": str(event),
                "GITHUB_API_URL": f"http://127.0.0.1:{server.server_port}",
                "GITHUB_REPOSITORY": "acme/app", "GITHUB_TOKEN": "t0ken"}  # fmt: skip
        posted = subprocess.run([shutil.which("bash") or "bash",
                                 str(REPO / "action" / "post-comment.sh")],
                                env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert posted.returncode == 0, posted.stderr
        path, _, body = _Recorder.received[-1]
        assert path == "/repos/acme/app/issues/7/comments"
        assert body["body"] == Path(outputs["summary"]).read_text()
    finally:
        server.shutdown()
        server.server_close()


def test_action_yml_gives_both_scripts_kilns_python() -> None:
    text = (REPO / "action.yml").read_text()
    assert text.count("KILN_PYTHON: ${{ runner.temp }}/kiln-venv/bin/python") == 2
