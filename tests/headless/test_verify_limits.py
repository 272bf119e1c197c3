"""The ``--verify`` command of `kiln run --ci` as a runner meets it (docs/ci.md): a hung one is
stopped by ``--max-minutes`` (before, each verification had 30 minutes of its own, twice), what
it left running in its group goes with it, SIGTERM during it (how a runner cancels a job) still
writes the summary with exit 130, a cancelled run is not verified again before it ends, output
of hundreds of megabytes is kept as a short tail (before: held whole, twice, ~2 GB of memory and
a 600 MB report.json), and what it leaves in the checkout (build output, ``__pycache__``) is not
the run's change (before, it went into the patch and the branch). A secret it prints stays out
of every output. Real `kiln run --ci` processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.repos import PYTEST

pytestmark = pytest.mark.e2e
EDIT = {"tool_calls": [{"name": "edit_file", "input": {
    "path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}}]}  # fmt: skip


def env_for(tmp: Path, steps: list, **extra: str) -> dict[str, str]:
    script = tmp / "script.json"
    script.write_text(json.dumps(steps))
    return {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script), **extra}


def argv(tmp: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lsp_server", "run", "--ci", "--artifacts", str(tmp / "out"),
            "--output-format", "json", *args, "fix the test"]  # fmt: skip


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    """Until ``path`` exists (the run got there); fails if the run ended first."""
    deadline = time.monotonic() + 90
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[list[subprocess.Popen]]:
    """Runs a test started and left running (it failed) are killed."""
    started: list[subprocess.Popen] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def gone(pid: int) -> bool:
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


def report(tmp: Path) -> dict:
    return json.loads((tmp / "out" / "report.json").read_text())


def test_max_minutes_stops_a_hung_verification_and_its_group(
    failing_repo: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "bg.pid"
    verify = f"sleep 600 & echo $! > {pid_file}; wait"
    proc = subprocess.run(
        argv(tmp_path, "--no-sandbox", "--verify", verify, "--max-minutes", "0.05"),
        cwd=failing_repo, env=env_for(tmp_path, ["never asked"]), capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    result = report(tmp_path)
    assert result["stop_reason"] == "max_time" and result["steps"] == 0
    # the time it was given, rounded as its `seconds` is (before: `[timed out after 2.99873s]`)
    assert re.search(r"\[timed out after \d+(\.\d{1,2})?s\]$", result["verify_before"]["tail"])
    assert "limit reached" in (tmp_path / "out" / "summary.md").read_text()
    assert gone(int(pid_file.read_text()))
    # which limit, in one line on stderr and as the result's error (before: exit 3, no word)
    line = "time limit reached (--max-minutes 0.05) during the verification before"
    assert result["error"] == line and f"kiln: {line}" in proc.stderr.splitlines()
    args = argv(tmp_path, "--no-sandbox", "--verify", "sleep 600", "--max-minutes", "0.05")
    args[args.index("json")] = "text"  # the text view printed none of it either
    text = subprocess.run(args, cwd=failing_repo, env=env_for(tmp_path, ["never asked"]),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert text.returncode == 3 and f"kiln: {line}" in text.stderr.splitlines(), text.stderr


def test_a_verification_after_cut_by_max_minutes_says_so(
    failing_repo: Path, tmp_path: Path
) -> None:
    """The agent finished in time, the verification after ran the clock out: exit 3, and the
    run says which limit in one line on stderr in every format (before: no line, an empty
    ``error``, and a closing line that read ``end_turn``)."""
    verify = "test -e calc.py.done && sleep 600; touch calc.py.done; exit 1"
    steps = [EDIT, "Fixed the sign."]
    for fmt in ("text", "json"):
        args = argv(tmp_path, "--no-sandbox", "--verify", verify, "--max-minutes", "0.2")
        args[args.index("json")] = fmt
        (failing_repo / "calc.py.done").unlink(missing_ok=True)
        subprocess.run(["git", "checkout", "-q", "--", "."], cwd=failing_repo, check=True)
        proc = subprocess.run(args, cwd=failing_repo, env=env_for(tmp_path, steps),
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 3, proc.stderr
        result = report(tmp_path)
        assert result["stop_reason"] == "max_time" and result["verify_after"]["exit_code"] == 124
        line = "time limit reached (--max-minutes 0.2) during the verification after"
        assert result["error"] == line
        assert proc.stderr.count(f"kiln: {line}") == 1, proc.stderr
        if fmt == "text":
            assert "[limit reached] max_time;" in proc.stderr


def test_sigterm_during_the_verification_writes_the_summary(
    failing_repo: Path, tmp_path: Path, no_leftovers: list
) -> None:
    started = tmp_path / "started"
    verify = f"touch {started}; sleep 600"
    run = subprocess.Popen(
        argv(tmp_path, "--no-sandbox", "--verify", verify), cwd=failing_repo,
        env=env_for(tmp_path, ["never asked"]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    no_leftovers.append(run)
    wait_for(started, run)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert json.loads(out)["outcome"] == "cancelled"
    assert "Kiln: cancelled" in (tmp_path / "out" / "summary.md").read_text()


def test_a_cancelled_run_is_not_verified_again(
    failing_repo: Path, tmp_path: Path, no_leftovers: list
) -> None:
    """SIGTERM while the agent works: the outputs are written at once, not after a second run
    of the verification (here one that would take ten minutes once the agent has begun)."""
    started = failing_repo / "started"
    verify = "test -e started && sleep 600; exit 1"
    steps = [EDIT, {"tool_calls": [{"name": "run_command", "input": {
        "command": "touch started && sleep 600"}}]}, "done"]  # fmt: skip
    run = subprocess.Popen(
        argv(tmp_path, "--verify", verify), cwd=failing_repo, env=env_for(tmp_path, steps),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    no_leftovers.append(run)
    wait_for(started, run)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    result = json.loads(out)
    assert result["stop_reason"] == "cancelled" and result["verify_after"] is None
    assert "calc.py" in Path(result["patch"]).read_text()  # the work so far, as a patch


def test_huge_output_is_a_bounded_tail(failing_repo: Path, tmp_path: Path) -> None:
    verify = "yes 0123456789abcdef | head -c 200000000; printf 'x%.0s' $(seq 3000); echo; exit 1"
    measure = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", measure, *argv(tmp_path, "--verify", verify)],
        cwd=failing_repo, env=env_for(tmp_path, ["done"]), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    peak_kb = int(proc.stdout.strip().splitlines()[-1])
    assert peak_kb < 400_000, peak_kb  # 200 MB of output twice: before, over 1.5 GB
    result = report(tmp_path)
    tail = result["verify_before"]["tail"]
    assert len(tail) < 8000 and tail.startswith("[… ") and "bytes of output before]" in tail
    assert tail.endswith("x" * 100 + " …")  # the 3,000-character last line, cut
    assert (tmp_path / "out" / "report.json").stat().st_size < 50_000


def test_a_secret_the_verification_prints_is_redacted(failing_repo: Path, tmp_path: Path) -> None:
    secret = "tok-4f9a8b7c6d5e"
    proc = subprocess.run(
        argv(tmp_path, "--no-sandbox", "--verify", "echo deploying with $DEPLOY_TOKEN; exit 1"),
        cwd=failing_repo, env=env_for(tmp_path, ["done"], DEPLOY_TOKEN=secret),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 12, proc.stderr
    assert "deploying with" in json.loads(proc.stdout)["verify_before"]["tail"]
    for name in ("report.json", "summary.md", "transcript.jsonl"):
        assert secret not in (tmp_path / "out" / name).read_text()
    assert secret not in proc.stdout + proc.stderr


def test_what_the_verification_leaves_is_not_the_runs_change(
    failing_repo: Path, tmp_path: Path
) -> None:
    verify = f"date > build.log && mkdir -p out && echo x > out/junit.xml && {PYTEST}"
    proc = subprocess.run(
        argv(tmp_path, "--verify", verify, "--commit-branch", "kiln/fix"),
        cwd=failing_repo, env=env_for(tmp_path, [EDIT, "Fixed the sign."]),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [f["path"] for f in json.loads(proc.stdout)["files_changed"]] == ["calc.py"]
    committed = subprocess.run(["git", "show", "--name-only", "--format=", "kiln/fix"],
                               cwd=failing_repo, capture_output=True, text=True)  # fmt: skip
    assert committed.stdout.split() == ["calc.py"]


def test_sigterm_during_the_verification_after_writes_the_summary(
    failing_repo: Path, tmp_path: Path, no_leftovers: list
) -> None:
    """Once the agent's event loop had closed, SIGTERM was back to its default: it killed kiln
    outright while the verification after ran (no summary, no patch, exit 143)."""
    started = tmp_path / "started"
    verify = f"test -e done.txt && touch {started} && sleep 600; exit 1"
    steps = [{"tool_calls": [{"name": "write_file", "input": {"path": "done.txt",
                                                              "content": "x\n"}}]}, "Done."]  # fmt: skip
    run = subprocess.Popen(
        argv(tmp_path, "--no-sandbox", "--verify", verify), cwd=failing_repo,
        env=env_for(tmp_path, steps), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    no_leftovers.append(run)
    wait_for(started, run)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    result = json.loads(out)
    assert result["stop_reason"] == "cancelled" and result["verify_after"] is None
    assert "done.txt" in Path(result["patch"]).read_text()


def test_max_minutes_keeps_time_for_the_verification_after(
    failing_repo: Path, tmp_path: Path
) -> None:
    """Before, the agent got all of what the verification before left of `--max-minutes`: an
    agent that worked to the limit (here: fixes the bug, then a command that never ends) left
    nothing, and the run ended unverified although the fix was in. Now the agent's limit keeps
    twice what the verification before took, plus 10 s, at most half of what is left."""
    steps = [EDIT, {"tool_calls": [{"name": "run_command", "input": {"command": "sleep 600"}}]}]
    proc = subprocess.run(
        argv(tmp_path, "--no-sandbox", "--verify", PYTEST, "--max-minutes", "0.5"),
        cwd=failing_repo, env=env_for(tmp_path, steps), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    result = report(tmp_path)
    assert proc.returncode == 3 and result["stop_reason"] == "max_time", proc.stderr
    assert result["verify_before"]["passed"] is False
    assert result["verify_after"] is not None and result["verify_after"]["passed"], result


def test_the_tail_is_at_most_15_lines_of_400_characters(failing_repo: Path, tmp_path: Path) -> None:
    """docs/ci.md: at most 15 lines of 400 characters. Past 64 KB the note of what came before
    was a 16th line, and a cut line was 402 characters with its ` …` mark."""
    verify = "python3 -c \"print('\\n'.join('L%d ' % i + 'x' * 500 for i in range(200)))\"; exit 1"
    proc = subprocess.run(
        argv(tmp_path, "--verify", verify), cwd=failing_repo, env=env_for(tmp_path, ["done"]),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 12, proc.stderr
    lines = report(tmp_path)["verify_before"]["tail"].splitlines()
    assert len(lines) == 15 and lines[0].startswith("[… "), lines
    assert lines[-1].startswith("L199 ") and lines[-1].endswith("x …"), lines[-1]
    assert max(len(line) for line in lines) == 400
