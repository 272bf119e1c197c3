"""A `kiln run` refused before it starts (bad flags, a missing key, an ambiguous `--resume`, a bad
root) with `--output-format json` or `stream-json`: a pipeline that parses stdout gets a result
object (`is_error`, the one-line error, the exit code) as docs/ci.md documents it, and stderr
keeps its one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.headless.test_run_ci import kiln
from tests.headless.test_stream_json import documented

pytestmark = pytest.mark.e2e


def plain(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`kiln run` with no provider chosen by the test (each case brings its own)."""
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", *args],
        cwd=root, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def refused(proc: subprocess.CompletedProcess, fmt: str) -> dict:
    """The one result object on stdout, checked against stderr's line and the doc's table."""
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("kiln: ") and "\n" not in line, proc.stderr
    lines = proc.stdout.splitlines()
    if fmt == "stream-json":
        assert len(lines) == 1, proc.stdout
        result = json.loads(lines[0])
        assert result.pop("type") == "result"
    else:
        result = json.loads(proc.stdout)
    assert set(result) - {"session_id"} == documented()["result"]
    assert result["is_error"] is True and result["exit_code"] == 2
    assert result["stop_reason"] == "not_started" and result["outcome"] == "bad usage"
    assert result["error"] == line.removeprefix("kiln: ")
    return result


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
def test_bad_flags_and_root_print_a_result(tmp_path: Path, fmt: str) -> None:
    bad_flag = plain(tmp_path, "--output-format", fmt, "--max-steps", "0", "fix it")
    assert "--max-steps" in refused(bad_flag, fmt)["error"]
    unknown = plain(tmp_path, f"--output-format={fmt}", "--bogus", "fix it")
    assert "--bogus" in refused(unknown, fmt)["error"]
    no_root = plain(tmp_path, "--root", str(tmp_path / "gone"), "--output-format", fmt, "x")
    assert "is not a directory" in refused(no_root, fmt)["error"]


def test_a_missing_key_prints_a_result(tmp_path: Path) -> None:
    proc = plain(tmp_path, "--output-format", "json", "fix it", env={"KILN_PROVIDER": "anthropic"})
    assert "ANTHROPIC_API_KEY" in refused(proc, "json")["error"]


def test_an_ambiguous_resume_prints_a_result(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for _ in range(2):
        assert kiln(root, ["done"], "--output-format", "json", "hello").returncode == 0
    proc = kiln(root, ["done"], "--resume", "2", "--output-format", "stream-json", "again")
    assert "ambiguous" in refused(proc, "stream-json")["error"]


def test_a_finished_run_is_not_an_error_and_text_output_prints_no_json(tmp_path: Path) -> None:
    done = kiln(tmp_path, ["done"], "--output-format", "json", "hello")
    assert done.returncode == 0 and json.loads(done.stdout)["is_error"] is False
    text = plain(tmp_path, "--max-steps", "0", "fix it")
    assert text.returncode == 2 and text.stdout == ""


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_checkout_owned_by_another_user_is_named_so(failing_repo: Path, tmp_path: Path) -> None:
    """A container job's checkout belongs to the runner's user; git refuses it ("dubious
    ownership") and the run said "is not a git checkout", which sent users looking for a
    missing clone. The line now says who owns it and how to trust it; trusting it works."""
    subprocess.run(["chown", "-R", "65534:65534", str(failing_repo)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    proc = kiln(failing_repo, ["done"], "--ci", "--output-format", "json", "fix it",
                env={"HOME": str(home)})  # fmt: skip
    error = refused(proc, "json")["error"]
    assert "owned by another user" in error and f"safe.directory {failing_repo}" in error
    (home / ".gitconfig").write_text(f"[safe]\n\tdirectory = {failing_repo}\n")
    trusted = kiln(failing_repo, ["done"], "--ci", "--output-format", "json", "fix it",
                   env={"HOME": str(home)})  # fmt: skip
    assert trusted.returncode == 11, trusted.stderr


def test_a_bad_branch_or_author_leaves_no_artifacts_folder(
    failing_repo: Path, tmp_path: Path
) -> None:
    """A run refused before it starts writes nothing: the `--artifacts` folder was made first
    and left empty, which an upload step then published as the run's outputs."""
    out = tmp_path / "out"
    for bad in (["--commit-branch", "a..b"], ["--commit-branch", "k/x", "--author", "nobody"]):
        proc = kiln(failing_repo, ["done"], "--ci", "--artifacts", str(out), *bad,
                    "--output-format", "json", "fix it")  # fmt: skip
        refused(proc, "json")
        assert not out.exists()


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
def test_a_verification_without_a_sandbox_is_refused_before_the_run(
    failing_repo: Path, tmp_path: Path, kiln_home: Path, fmt: str
) -> None:
    """`--verify` where no sandbox works: refused after a session was made, its `init` printed
    and the `--artifacts` folder created (left empty), with a result naming no session."""
    out = tmp_path / "out"
    proc = kiln(failing_repo, ["done"], "--ci", "--verify", "true", "--artifacts", str(out),
                "--output-format", fmt, "fix it", env={"KILN_BWRAP": str(tmp_path / "none")})  # fmt: skip
    assert "no backend is available" in refused(proc, fmt)["error"]
    assert not out.exists()
    assert not (kiln_home / "sessions").exists() or not any((kiln_home / "sessions").iterdir())


@pytest.mark.parametrize("folder", [".", "", "ROOT"])
def test_the_workspace_itself_as_artifacts_is_refused(failing_repo: Path, folder: str) -> None:
    """`--artifacts .` (or an empty value, or the root's own path) put the transcript, summary
    and report among the checkout's files: the run counted its own transcript as its change
    (exit 10 for a run that changed nothing) and a `--commit-branch` would commit it."""
    folder = str(failing_repo) if folder == "ROOT" else folder
    proc = kiln(failing_repo, ["Nothing to change."], "--ci", "--artifacts", folder,
                "--commit-branch", "kiln/x", "--output-format", "json", "fix")  # fmt: skip
    line = f"kiln: --artifacts {failing_repo} is the workspace itself; refused:"
    assert proc.returncode == 2 and proc.stderr.startswith(line), proc.stderr
    assert json.loads(proc.stdout)["stop_reason"] == "not_started"
    status = subprocess.run(["git", "status", "--porcelain"], cwd=failing_repo,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert status == ""  # nothing written in the checkout, no branch made
    assert "kiln/x" not in subprocess.run(["git", "branch"], cwd=failing_repo,
                                          capture_output=True, text=True).stdout  # fmt: skip


def test_an_artifacts_folder_that_takes_no_file_is_refused_before_the_run(
    failing_repo: Path,
) -> None:
    """`--artifacts /proc/self` exists but takes no file: the run went on to the end and failed
    writing its outputs (exit 1); the folder is now tried before any model call."""
    touch = {"tool_calls": [{"name": "run_command", "input": {"command": "touch ran"}}]}
    proc = kiln(failing_repo, [touch, "done"], "--ci", "--artifacts", "/proc/self",
                "--output-format", "json", "fix it")  # fmt: skip
    result = refused(proc, "json")
    assert result["error"].startswith("cannot write in the artifacts folder /proc/self: ")
    assert not (failing_repo / "ran").exists()  # the model was never asked
