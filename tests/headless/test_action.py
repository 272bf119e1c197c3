"""The GitHub Action's shell steps, run for real: action/run.sh in a git repo with the scripted
model, and action/post-comment.sh against a local HTTP server standing in for the GitHub API."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.child_signals import as_from_a_terminal
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


@pytest.mark.parametrize(
    "task", ["--no-sandbox", "--verify=true", "-y", "-", "- fix it\n\n```\n$(id) `id`\n```"]
)
def test_a_task_that_reads_as_an_option_stays_the_task(
    failing_repo: Path, tmp_path: Path, task: str
) -> None:
    """A workflow that passes an issue title as the task: a title of "--no-sandbox" turned the
    sandbox off (and "--verify=…" chose the verification) instead of being the task; a task of
    "-" read the step's empty stdin and ended "the task is empty" (exit 2)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Nothing to do for that."]))
    art = tmp_path / "art"
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "KILN_TASK": task, "KILN_ARTIFACTS": str(art),
           "KILN_COMMAND": f"{sys.executable} -m lsp_server"}  # fmt: skip
    proc = subprocess.run(["bash", str(REPO / "action" / "run.sh")], cwd=failing_repo, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads((art / "report.json").read_text())
    assert report["task"] == task and report["outcome"] == "nothing to do"
    assert report["verify_after"] is None


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


def test_post_comment_keeps_the_token_out_of_the_process_list(tmp_path: Path) -> None:
    """Before, the token was an argument of curl (`-H "Authorization: Bearer …"`), in
    /proc/PID/cmdline for any process on the runner to read while the request ran."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        bin_dir, argv_log = tmp_path / "bin", tmp_path / "curl-argv"
        bin_dir.mkdir()
        real = subprocess.run(["bash", "-c", "command -v curl"], capture_output=True, text=True)
        (bin_dir / "curl").write_text(
            f'#!/bin/bash\nprintf "%s\\n" "$@" > {argv_log}\nexec {real.stdout.strip()} "$@"\n'
        )
        (bin_dir / "curl").chmod(0o755)
        summary, event = tmp_path / "summary.md", tmp_path / "event.json"
        summary.write_text("## Kiln: ok\n")
        event.write_text(json.dumps({"issue": {"number": 6, "title": "x"}}))
        token = "ghs_0123456789abcdefSECRET"
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
               "KILN_SUMMARY": str(summary), "GITHUB_EVENT_PATH": str(event),
               "GITHUB_API_URL": f"http://127.0.0.1:{server.server_port}",
               "GITHUB_REPOSITORY": "acme/app", "GITHUB_TOKEN": token}  # fmt: skip
        proc = subprocess.run(["bash", str(REPO / "action" / "post-comment.sh")], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert argv_log.read_text() and token not in argv_log.read_text()
        assert _Recorder.received[-1][1]["Authorization"] == f"Bearer {token}"
    finally:
        server.shutdown()
        server.server_close()


def test_post_comment_fits_a_long_summary_in_one_comment(tmp_path: Path) -> None:
    """Before, the body was one argument of curl: a 200 KB summary was "Argument list too
    long", and one over 65,536 characters a comment GitHub refuses; a byte that is not UTF-8
    (a file name) failed the script."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        summary = tmp_path / "summary.md"
        summary.write_bytes(
            b"## Kiln: ok\n\n| caf\xe9.txt |\n" + b"- a line of the table\n" * 10_000
        )
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"issue": {"number": 5, "title": "x"}}))
        env = {**os.environ, "KILN_SUMMARY": str(summary), "GITHUB_EVENT_PATH": str(event),
               "GITHUB_API_URL": f"http://127.0.0.1:{server.server_port}",
               "GITHUB_REPOSITORY": "acme/app", "GITHUB_TOKEN": "t0ken"}  # fmt: skip
        proc = subprocess.run(["bash", str(REPO / "action" / "post-comment.sh")], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        path, _, body = _Recorder.received[-1]
        assert path == "/repos/acme/app/issues/5/comments"
        assert len(body["body"]) <= 65_536 and body["body"].startswith("## Kiln: ok\n\n| caf")
        assert body["body"].endswith("the whole one is in the run's artifacts)*\n")
    finally:
        server.shutdown()
        server.server_close()


def test_each_run_uploads_its_own_artifacts(failing_repo: Path, tmp_path: Path) -> None:
    """An artifact name is taken once per workflow run (upload-artifact v4): before, every Kiln
    step uploaded "kiln-run" from one shared folder, so a second one in a job or a matrix failed
    its upload (and overwrote the first's files)."""
    import yaml

    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Nothing to do."]))
    names, folders = [], []
    for n in range(2):
        output = tmp_path / f"github_output{n}"
        env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
               "KILN_TASK": "look", "RUNNER_TEMP": str(tmp_path), "GITHUB_JOB": "fix",
               "GITHUB_OUTPUT": str(output), "KILN_COMMAND": f"{sys.executable} -m lsp_server"}  # fmt: skip
        env.pop("KILN_ARTIFACTS", None)
        proc = subprocess.run(["bash", str(REPO / "action" / "run.sh")], cwd=failing_repo,
                              env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
        assert Path(outputs["summary"]).parent == Path(outputs["artifacts"])
        names.append(outputs["artifact-name"])
        folders.append(outputs["artifacts"])
    assert names[0] != names[1] and folders[0] != folders[1]
    assert all(re.fullmatch(r"kiln-fix-[A-Za-z0-9]+", name) for name in names)
    steps = yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"]
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert "steps.kiln.outputs.artifact-name" in upload["with"]["name"]
    assert upload["with"]["path"] == "${{ steps.kiln.outputs.artifacts }}"


def test_the_action_leaves_the_jobs_python_alone() -> None:
    """Before, the action ran setup-python (which puts its Python first on PATH for the rest of
    the job) and pip-installed Kiln into it: `--verify "pytest"` then ran with another
    interpreter than the project's, and Kiln's dependencies could replace the project's. Now
    Kiln has a virtual environment of its own and is called by its path."""
    import yaml

    steps = yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"]
    python = next(s for s in steps if str(s.get("uses", "")).startswith("actions/setup-python"))
    assert python["with"]["update-environment"] is False
    install = next(s for s in steps if s.get("name") == "Install Kiln")
    assert "python -m pip" not in install["run"].replace("/bin/python", "")
    assert install["env"]["KILN_PYTHON"] == f"${{{{ steps.{python['id']}.outputs.python-path }}}}"
    assert '"$KILN_PYTHON" -m venv "$KILN_VENV"' in install["run"]
    run = next(s for s in steps if s.get("id") == "kiln")
    assert run["env"]["KILN_COMMAND"] == install["env"]["KILN_VENV"] + "/bin/kiln"


def test_action_yml_is_a_composite_action_calling_the_tested_scripts() -> None:
    import yaml

    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    runs = " ".join(step.get("run", "") for step in action["runs"]["steps"])
    assert "action/run.sh" in runs and "action/post-comment.sh" in runs
    assert {"exit-code", "summary", "patch"} <= set(action["outputs"])


def step_script(tmp_path: Path, step_id: str) -> Path:
    """The ``run:`` of a step of action.yml as the runner writes it to a file for bash."""
    import yaml

    steps = yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"]
    run = next(s for s in steps if s.get("id") == step_id)["run"]
    path = tmp_path / f"{step_id}.sh"
    path.write_text(run.replace("${{ github.action_path }}", str(REPO)))
    return path


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_a_cancelled_job_ends_kiln_with_its_summary(
    failing_repo: Path, tmp_path: Path, first: signal.Signals
) -> None:
    """A runner cancels a step by signalling the shell it started (SIGINT, then SIGTERM, then
    SIGKILL to the tree). Before, the shells in between kept the signal from kiln: SIGINT did
    nothing until the kill, SIGTERM ended the shell and left kiln running on, orphaned; either
    way no summary, no exit code. Now kiln is cancelled: exit 130, the summary written."""
    started = failing_repo / "started"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "run_command", "input": {"command": "touch started && sleep 600"}}]},
        "done",
    ]))  # fmt: skip
    output = tmp_path / "github_output"
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "KILN_TASK": "fix it", "KILN_ARTIFACTS": str(tmp_path / "art"),
           "KILN_COMMAND": f"{sys.executable} -m lsp_server", "GITHUB_OUTPUT": str(output)}  # fmt: skip
    step = subprocess.Popen(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(step_script(tmp_path, "kiln"))],
        cwd=failing_repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=as_from_a_terminal,  # a runner's shell can trap SIGINT
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not started.exists():
            assert step.poll() is None, step.communicate()
            assert time.monotonic() < deadline, "the agent's command never started"
            time.sleep(0.05)
        step.send_signal(first)
        out, err = step.communicate(timeout=60)
    finally:
        if step.poll() is None:  # failed: end the step's group (kiln in it)
            os.killpg(step.pid, signal.SIGKILL)
            step.wait()
    assert step.returncode == 130, err
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["exit-code"] == "130" and outputs["outcome"] == "cancelled"
    assert "Kiln: cancelled" in Path(outputs["summary"]).read_text()


def test_every_action_the_action_runs_is_pinned_to_a_commit() -> None:
    """A tag (`@v4`) is moved by whoever controls that repository, and the step it names runs
    with the job's token and the model keys in reach; a commit sha cannot be moved. The example
    workflow pins the third-party actions it uses the same way (docs/ci.md)."""
    import yaml

    steps = yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"]
    used = [s["uses"] for s in steps if "uses" in s]
    example = yaml.safe_load((REPO / "docs" / "examples" / "kiln-fix.yml").read_text())
    used += [
        s["uses"]
        for job in example["jobs"].values()
        for s in job["steps"]
        if "uses" in s and not s["uses"].startswith("kiln-agent/")  # Kiln's own: the reader's pin
    ]
    assert len(used) >= 4
    for ref in used:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), ref


@pytest.mark.parametrize("inputs", [{}, {"KILN_MAX_STEPS": "many"}, {"KILN_VERIFY": " "}])
def test_missing_or_bad_inputs_fail_the_step_with_outputs(
    failing_repo: Path, tmp_path: Path, inputs: dict
) -> None:
    """No task and no event (a workflow on `push` that forgot `task:`) or an input kiln refuses:
    the step fails with exit 2 and one line, and the step's outputs still say so (`exit-code`
    was empty when run.sh refused before kiln ran, and a later step's `if:` read nothing)."""
    output = tmp_path / "github_output"
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_EVENT_PATH"}
    env |= {"GITHUB_OUTPUT": str(output), "KILN_ARTIFACTS": str(tmp_path / "art"),
            "KILN_COMMAND": f"{sys.executable} -m lsp_server", "KILN_PROVIDER": "scripted",
            "KILN_SCRIPT": str(tmp_path / "none.json"), **inputs}  # fmt: skip
    if inputs:
        env["KILN_TASK"] = "fix it"
    proc = subprocess.run(["bash", str(REPO / "action" / "run.sh")], cwd=failing_repo, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["exit-code"] == "2" and outputs["outcome"] == "bad usage", outputs
