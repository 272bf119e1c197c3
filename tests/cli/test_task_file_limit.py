"""`kiln run --task-file FILE` (and `kiln run -`) read at most 32 MB: `/dev/zero`, a FIFO a
program writes to without end and a file of a gigabyte were read whole into memory before the
run began. Each is refused with one line and exit 2; the child runs under an address-space
limit, so a regression fails the test instead of taking the machine's memory."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest

from lsp_server.cli.task_input import TASK_FILE_MAX

pytestmark = pytest.mark.e2e

MEMORY = 512 * 1024 * 1024  # a whole run needs under 300 MB of address space


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def kiln(root: Path, *args: str, stdin: IO[bytes] | int = subprocess.DEVNULL):
    script = root.parent / "script.json"
    script.write_text(json.dumps(["Done."]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--output-format", "json", *args],
        cwd=root, env=env, stdin=stdin, capture_output=True, text=True, timeout=120,
        preexec_fn=limited,
    )  # fmt: skip


def refused_too_large(proc: subprocess.CompletedProcess[str], where: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        f"kiln: {where} holds more than 32 MB, the most a task may be; give its last part "
        "(`tail -c 32M FILE`)"
    ], proc.stderr
    assert json.loads(proc.stdout)["stop_reason"] == "not_started"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_dev_zero_is_refused(root: Path) -> None:
    refused_too_large(kiln(root, "--task-file", "/dev/zero"), "--task-file /dev/zero")


def test_dev_zero_on_stdin_is_refused(root: Path) -> None:
    with open("/dev/zero", "rb") as zero:
        refused_too_large(kiln(root, "-", stdin=zero), "stdin")


def test_a_file_of_a_gigabyte_is_refused(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    with open(log, "wb") as fh:  # sparse: a gigabyte to read, nothing on the disk
        fh.truncate(1024 * 1024 * 1024)
    refused_too_large(kiln(root, "--task-file", str(log)), f"--task-file {log}")


def test_a_fifo_that_never_ends_is_refused(root: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    written: list[int] = []

    def write_forever() -> None:
        # unbuffered: a buffered file's close would flush into the closed pipe and raise again,
        # outside any handler (a thread exception pytest reports as a failure)
        line = b"ERROR: the build failed\n" * 4096
        fd = os.open(fifo, os.O_WRONLY)
        try:
            while True:
                written.append(os.write(fd, line))
        except BrokenPipeError:  # kiln closed its end: it stopped reading
            pass
        finally:
            os.close(fd)

    writer = threading.Thread(target=write_forever, daemon=True)
    writer.start()
    refused_too_large(kiln(root, "--task-file", str(fifo)), f"--task-file {fifo}")
    writer.join(timeout=60)
    assert not writer.is_alive()
    assert sum(written) > TASK_FILE_MAX  # it was read up to the limit, no further


def test_a_task_at_the_limit_is_read(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_bytes(b"x" * (TASK_FILE_MAX - 20) + b"\nROOT CAUSE\n")
    proc = kiln(root, "--task-file", str(log))
    assert proc.returncode == 0, proc.stderr
    assert "ROOT CAUSE" in json.loads(proc.stdout)["task"]


def test_the_last_part_the_refusal_suggests_is_read(root: Path, tmp_path: Path) -> None:
    """`tail -c 32M FILE`, as the refusal says, cuts bytes: the part of a log with non-ASCII text
    began inside a character and was refused as "not UTF-8 text". A character cut at either end
    is left out; a byte that is no UTF-8 anywhere else is still refused in one line."""
    log = tmp_path / "build.log"
    log.write_bytes(("é" * 100 + "\nFAILED test_dates — ROOT CAUSE ✓\n").encode()[1:-3])
    proc = kiln(root, "--task-file", str(log))
    assert proc.returncode == 0, proc.stderr
    task = json.loads(proc.stdout)["task"]
    assert task.startswith("é" * 99) and task.endswith("FAILED test_dates — ROOT CAUSE ")
    binary = tmp_path / "core.bin"
    binary.write_bytes(b"ELF\x00\xff\xfe\x01")
    proc = kiln(root, "--task-file", str(binary))
    assert proc.returncode == 2 and proc.stderr == f"kiln: --task-file {binary} is not UTF-8 text\n"
