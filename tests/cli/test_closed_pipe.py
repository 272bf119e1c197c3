"""`kiln … | head`: when the reader of stdout leaves, the command stops quietly with the
status a shell gives a command ended by SIGPIPE (141), not 1 (which `kiln` uses for an
internal failure, and `set -o pipefail` scripts would report as one), and no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BROKEN_PIPE = 141


def env(**extra: str) -> dict[str, str]:
    # Unbuffered, Python drops the rest of a write the pipe took only part of, without an
    # error: the reader leaving would go unnoticed by any program.
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return {**inherited, "PYTHONPATH": str(ROOT), **extra}


def read_one_line_then_leave(args: list[str], cwd: Path) -> tuple[int, str]:
    """Start `kiln ARGS`, read its first line, close the pipe; its exit code and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", *args], cwd=cwd, env=env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert first, "no output at all"
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


@pytest.fixture
def long_session(tmp_path: Path) -> tuple[Path, str]:
    """A session whose transcript prints far more than a pipe holds (64 KiB), and whose request
    (what `kiln context show` prints; the answer is in none) does too: the task is long."""
    root = tmp_path / "ws"
    root.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["\n".join(f"line {n} of a long answer" for n in range(20_000))]))
    task = tmp_path / "task.txt"
    # under the 100,000 characters a task is sent whole (a longer one is sent as a preview)
    task.write_text("\n".join(f"line {n:05} of a long task" for n in range(3_700)))
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--output-format", "json", "--task-file",
         str(task)],
        cwd=root, env=env(KILN_PROVIDER="scripted", KILN_SCRIPT=str(script)),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return root, str(json.loads(proc.stdout)["session_id"])


@pytest.mark.parametrize(
    "args",
    [("sessions", "show", "{sid}"), ("sessions", "show", "{sid}", "--json"),
     ("context", "show", "{sid}", "--full")],
)  # fmt: skip
def test_a_reader_that_leaves_ends_the_command_quietly(
    long_session: tuple[Path, str], args: tuple[str, ...]
) -> None:
    root, sid = long_session
    code, err = read_one_line_then_leave([a.format(sid=sid) for a in args], root)
    assert code == BROKEN_PIPE, err
    assert err == ""


def leaving_script(tmp_path: Path, first: dict) -> tuple[Path, Path]:
    """A script whose second model call waits for the marker file: whatever kiln prints after
    it is written after the reader left, however fast the machine (a pipe holds 64 KiB)."""
    marker = tmp_path / "reader-left"
    more = [{"tool_calls": [{"name": "list_files", "input": {}}]}] * 3
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [first]}, {"wait_for": str(marker)}, *more,
                                  "done"]))  # fmt: skip
    return script, marker


def first_line_then_leave(args: list[str], cwd: Path, stream: str, **extra: str) -> int:
    """`kiln ARGS` whose ``stream`` (stdout or stderr) is read for one line, then closed (and
    ``marker``, if given, made); the other goes to /dev/null. Its exit code."""
    marker = extra.pop("marker", "")
    pipes = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: subprocess.PIPE}
    proc = subprocess.Popen([sys.executable, "-m", "lsp_server", *args], cwd=cwd,
                            env=env(**extra), **pipes)  # fmt: skip
    reader = getattr(proc, stream)
    assert reader.readline(), "no output at all"
    reader.close()
    if marker:
        Path(marker).touch()
    return proc.wait(timeout=120)


@pytest.mark.parametrize(
    ("output_format", "stream"), [("stream-json", "stdout"), ("text", "stderr")]
)
def test_kiln_run_ends_quietly_when_its_reader_leaves(
    tmp_path: Path, output_format: str, stream: str
) -> None:
    """`kiln run 2>&1 | head`: the text view's tool lines go to stderr, and rich's handler for
    a closed pipe exited 1 (an internal failure, to a `pipefail` script)."""
    root = tmp_path / "ws"
    root.mkdir()
    script, marker = leaving_script(tmp_path, {"name": "list_files", "input": {}})
    code = first_line_then_leave(
        ["run", "--output-format", output_format, "--mode", "yolo", "go"], root, stream,
        KILN_PROVIDER="scripted", KILN_SCRIPT=str(script), marker=str(marker),
    )  # fmt: skip
    assert code == BROKEN_PIPE


def test_a_ci_run_whose_reader_leaves_stops_with_its_outputs(tmp_path: Path) -> None:
    """`kiln run --ci --output-format stream-json | head -1`: the run stopped at the next line
    it printed, leaving the agent's edits in the checkout with no patch, summary or report."""
    from tests.repos import make_failing_repo

    repo = make_failing_repo(tmp_path)
    edit = {"name": "write_file", "input": {"path": "notes.txt", "content": "x\n"}}
    script, marker = leaving_script(tmp_path, edit)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format", "stream-json",
         "--artifacts", str(out), "go"],
        cwd=repo, env=env(KILN_PROVIDER="scripted", KILN_SCRIPT=str(script)),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:  # up to the write's end, then the reader leaves
        if json.loads(line)["type"] == "tool_call_update":
            break
    proc.stdout.close()
    marker.touch()
    assert proc.wait(timeout=120) == BROKEN_PIPE
    report = json.loads((out / "report.json").read_text())
    assert report["stop_reason"] == "cancelled" and report["steps"] == 2
    assert "+x" in (out / "changes.patch").read_text() and (out / "summary.md").exists()


@pytest.mark.parametrize("output_format", ["text", "stream-json"])
def test_a_reader_that_leaves_during_the_last_answer(tmp_path: Path, output_format: str) -> None:
    """The reader left while the final answer streamed (no tool call after it): the cancel
    came as the turn ended, asyncio marked the finished turn cancelled, and `kiln run` exited 1
    (an internal failure) with nothing on stderr, and no report."""
    from tests.repos import make_failing_repo

    repo = make_failing_repo(tmp_path)
    script = tmp_path / "script.json"  # more than a pipe holds: the reader leaves mid-answer
    script.write_text(json.dumps(["\n".join(f"line {n} of a long answer" for n in range(20_000))]))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format", output_format,
         "--artifacts", str(out), "go"],
        cwd=repo, env=env(KILN_PROVIDER="scripted", KILN_SCRIPT=str(script)),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=120) == BROKEN_PIPE
    report = json.loads((out / "report.json").read_text())
    assert report["stop_reason"] == "cancelled" and report["exit_code"] == 130


def test_a_reader_that_leaves_is_seen_with_pythonunbuffered(tmp_path: Path) -> None:
    """CI jobs often set PYTHONUNBUFFERED=1, under which Python drops the rest of a write the
    pipe took only part of, without an error: the reader of a long JSON result left, and
    `kiln run --ci` exited 11 as if a whole result had been read."""
    from tests.repos import make_failing_repo

    root = make_failing_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["\n".join(f"line {n} of a long answer" for n in range(20_000))]))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format", "json",
         "--artifacts", str(out), "go"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env(KILN_PROVIDER="scripted", KILN_SCRIPT=str(script), PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.read(10)
    proc.stdout.close()
    assert proc.wait(timeout=120) == BROKEN_PIPE
    # `json` prints once the run ended: it was not cut short, and its report says how it ended
    assert json.loads((out / "report.json").read_text())["exit_code"] == 11
