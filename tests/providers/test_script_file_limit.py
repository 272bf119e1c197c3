"""The scripted model's script file (`KILN_SCRIPT`, `script_file`) is a regular file of at most
32 MB: `KILN_SCRIPT=/dev/zero kiln run x` read until memory ran out (an internal error), a FIFO
held the run before it began, and `[[[…` ended it in a `RecursionError`. Each is refused with one
line and exit 2, before a session is made; the child runs under an address-space limit, so a
regression fails the test instead of taking the machine's memory."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SCRIPT_MAX = 32 * 1024 * 1024  # the limit the docs give (agent.providers.scripted)
MEMORY = 512 * 1024 * 1024  # a whole run needs under 300 MB of address space


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def kiln(root: Path, script: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60, preexec_fn=limited,
    )  # fmt: skip


def refused(root: Path, script: Path | str, why: str) -> None:
    proc = kiln(root, script, "run", "x")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"kiln: cannot read script file {script}: {why} (set KILN_SCRIPT to a JSON file)"
    ], proc.stderr
    listed = kiln(root, script, "sessions", "list", "--all", "--json")
    assert json.loads(listed.stdout) == [], "a session was made for a run that never began"


@pytest.fixture
def root(tmp_path: Path, kiln_home: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_dev_zero_is_refused(root: Path) -> None:
    refused(root, "/dev/zero", "not a regular file")


def test_a_fifo_is_refused_without_waiting_for_a_writer(root: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "script.fifo"
    os.mkfifo(fifo)
    refused(root, fifo, "not a regular file")


def test_a_fifo_with_a_writer_that_never_ends_is_refused(root: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "script.fifo"
    os.mkfifo(fifo)
    stop = threading.Event()

    def write_forever() -> None:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # no reader yet: ENXIO, try again
        except OSError:
            if not stop.wait(0.01):
                return write_forever()
            return
        try:
            while not stop.is_set():
                try:
                    os.write(fd, b"[" * 65536)
                except BlockingIOError:
                    stop.wait(0.01)
        except BrokenPipeError:
            pass
        finally:
            os.close(fd)

    writer = threading.Thread(target=write_forever, daemon=True)
    writer.start()
    try:
        refused(root, fifo, "not a regular file")
    finally:
        stop.set()
        writer.join(timeout=10)


def test_a_file_past_the_limit_is_refused(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    with open(script, "wb") as fh:  # sparse: a gigabyte to read, nothing on the disk
        fh.truncate(1024 * 1024 * 1024)
    refused(root, script, "larger than 32 MB")


def test_a_script_nested_too_deep_is_refused(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text("[" * 200_000 + "]" * 200_000)
    proc = kiln(root, script, "run", "x")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"kiln: script file {script} is not valid JSON: JSON nested deeper than 64 levels "
        "(a script is a JSON list of steps)"
    ], proc.stderr


def test_a_script_at_the_limit_is_read(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    body = json.dumps(["Done."])
    script.write_text(body + " " * (SCRIPT_MAX - len(body)))  # a long script, not a long reply
    assert script.stat().st_size == SCRIPT_MAX
    proc = kiln(root, script, "run", "--output-format", "json", "x")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"] == "Done."
