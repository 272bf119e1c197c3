"""The task read from `--task-file FILE` or stdin (`kiln run -`): at most ``TASK_FILE_MAX`` bytes.

Read whole, `--task-file /dev/zero`, a FIFO a program writes to without end, or a log of
gigabytes took all the memory it could before the run began; the task past 100,000 characters
is cut to a preview for the model anyway (`TASK_BUDGET`), and the whole of it is kept only as a
file to grep. So the file is read in pieces up to the limit, and one past it is refused with one
line and exit 2 before anything is made, pointing at its last part, where a build log's failure
is."""

from __future__ import annotations

import codecs
import sys
from pathlib import Path
from typing import BinaryIO

import click

TASK_FILE_MAX = 32 * 1024 * 1024  # bytes; docs/ci.md
CHUNK = 1024 * 1024


def read_capped(stream: BinaryIO, limit: int = TASK_FILE_MAX) -> bytes | None:
    """The stream's bytes, or None when it holds more than ``limit`` (never more is read)."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = stream.read(min(CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    return None


def read_task(task_file: Path) -> str:
    """The task in ``task_file`` (``-``: stdin), refused in one line when it cannot be read,
    is larger than the limit or is not UTF-8."""
    stdin = str(task_file) == "-"
    where = "stdin" if stdin else f"--task-file {task_file}"
    try:
        if stdin:
            data = read_capped(sys.stdin.buffer)
        else:
            with open(task_file, "rb") as fh:
                data = read_capped(fh)
    except OSError as exc:
        raise click.UsageError(f"cannot read {where}: {exc.strerror or exc}") from None
    if data is None:
        mb = TASK_FILE_MAX // (1024 * 1024)
        raise click.UsageError(
            f"{where} holds more than {mb} MB, the most a task may be; give its last part "
            f"(`tail -c {mb}M FILE`)"
        )
    try:
        return utf8_text(data)
    except UnicodeDecodeError:
        raise click.UsageError(f"{where} is not UTF-8 text") from None


def utf8_text(data: bytes) -> str:
    """``data`` as UTF-8, a character cut at either end left out: `tail -c 32M FILE`, which the
    refusal above suggests, cuts bytes, and a log's last part began inside a character."""
    start = 0
    while start < min(3, len(data)) and 0x80 <= data[start] < 0xC0:  # continuation bytes
        start += 1
    # not final: a character unfinished at the end is left out; an invalid byte anywhere raises
    return codecs.utf_8_decode(data[start:], "strict", False)[0]
