"""How a `kiln` process ends when a command fails: one line on stderr and an exit code.

This is the one place that turns exceptions into exit codes. Kiln's own errors carry their
line, hint and code (``kiln_errors.KilnError``); click's usage errors theirs. What the host
refuses (a read-only or full disk, a file where a folder belongs), text that is not UTF-8 (an
argument, a variable or a file) and a damaged SQLite file get one line each too. Ctrl-C and
SIGTERM unwind the command like an exception, so its ``finally`` blocks and rollbacks run (a
half-extracted skill is removed, an index transaction rolled back) and the exit is 130
(cancelled). A reader of stdout that leaves (`kiln … | head`) ends the command quietly with
141, the status a shell gives a command SIGPIPE ended. Anything else is a bug: one line that
names the file holding the traceback (``KILN_DEBUG=1`` prints it instead), exit 1.
``KILN_DEBUG`` is a switch like ``KILN_CI``: ``KILN_DEBUG=0`` printed tracebacks (any value
did), so a value that is neither on nor off is refused before the command runs, exit 2.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click

from agent.errors import UsageError
from kiln_errors import KilnError
from kiln_errors.setting import SWITCH_WORDS, switch
from lsp_server.headless.terminal import safe
from skills_registry.config_file import unreadable

CANCELLED = 130
FAILED = 1
USAGE = 2
BROKEN_PIPE = 141  # what a shell reports for a command killed by SIGPIPE


class ReaderLeft(Exception):  # noqa: N818 - an event, like KeyboardInterrupt
    """The reader of stdout is gone (`kiln … | head`): a broken pipe, taken past click, which
    would end the command as a silent exit 1."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is: code that cleans up after Ctrl-C does so here too."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises ``Terminated`` in the main thread (a server that handles it itself, like
    ``kiln lsp``, installs its own handler over this one)."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (an embedding host): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit(line: str, code: int) -> NoReturn:
    try:
        click.echo(line, err=True)
    except OSError:  # stderr itself is gone: the exit code still says what happened
        pass
    sys.exit(code)


def os_error_line(exc: OSError) -> str:
    """``cannot use PATH: Read-only file system`` (the paths the system call named)."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileExistsError) and exc.filename and not os.path.isdir(exc.filename):
        reason = "a file is there, not a folder"  # mkdir of KILN_HOME, a skills folder…
    if isinstance(exc, NotADirectoryError) and exc.filename is not None:
        reason = unreadable(Path(os.fsdecode(exc.filename)), exc)  # which folder is a file
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    if not paths and isinstance(exc, FileNotFoundError) and not _cwd_exists():
        return "kiln: the current folder no longer exists (cd to one that does)"
    if not paths:
        return f"kiln: {reason}"
    return f"kiln: cannot use {' -> '.join(paths)}: {reason}"


def _cwd_exists() -> bool:
    """False when the shell's folder was removed under it (``os.getcwd`` names no path)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def unicode_line(exc: UnicodeError) -> str:
    if isinstance(exc, UnicodeEncodeError):  # a surrogate-escaped byte from argv or environ
        return (
            "kiln: an argument or environment value is not valid UTF-8 text "
            f"({exc.object[exc.start : exc.end]!r})"
        )
    if isinstance(exc, UnicodeDecodeError):
        return f"kiln: a file Kiln read is not valid UTF-8 text ({exc.reason} at byte {exc.start})"
    return f"kiln: text is not valid UTF-8 ({exc})"


def check_debug_setting() -> None:
    """Refuse a ``KILN_DEBUG`` that is neither on nor off, before the command runs."""
    value = os.environ.get("KILN_DEBUG", "")
    if switch(value) is None:
        raise UsageError(
            f"KILN_DEBUG must be {SWITCH_WORDS}, not {value.strip()[:40]!r}",
            hint="1 prints a bug's traceback on stderr",
        )


def internal_line(exc: BaseException) -> str:
    """The line for a bug; the traceback goes to a file it names (or to stderr with
    ``KILN_DEBUG``)."""
    text = "".join(traceback.format_exception(exc))
    if switch(os.environ.get("KILN_DEBUG", "")):
        sys.stderr.write(text)
        return f"kiln: internal error: {type(exc).__name__}: {exc}"
    where = ""
    try:
        fd, path = tempfile.mkstemp(prefix="kiln-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as fh:
            fh.write(text)
        where = f" (traceback in {path}; please report it)"
    except OSError:
        where = " (set KILN_DEBUG=1 to see the traceback)"
    return f"kiln: internal error: {type(exc).__name__}: {exc}{where}"


def failure_line(exc: BaseException) -> tuple[str, int]:
    """The one line and the exit code a command that raised ``exc`` ends with."""
    if isinstance(exc, Terminated):
        return "kiln: terminated", CANCELLED
    if isinstance(exc, click.exceptions.Abort):  # click's word for Ctrl-C (or SIGTERM)
        terminated = isinstance(exc.__context__, Terminated)
        return ("kiln: terminated" if terminated else "kiln: aborted"), CANCELLED
    if isinstance(exc, KeyboardInterrupt):
        return "kiln: interrupted", CANCELLED
    if isinstance(exc, click.ClickException):
        return f"kiln: {exc.format_message()}", exc.exit_code
    if isinstance(exc, KilnError):  # Kiln's own table: message, hint, exit code
        return f"kiln: {exc}" + (f" ({exc.hint})" if exc.hint else ""), int(exc.exit_code)
    if isinstance(exc, OSError):
        return os_error_line(exc), FAILED
    if isinstance(exc, UnicodeError):
        return unicode_line(exc), USAGE
    if isinstance(exc, sqlite3.Error):
        busy = "locked" in str(exc) or "busy" in str(exc)
        hint = " (another process is writing it; retry when it finishes)" if busy else ""
        return f"kiln: database error: {exc}{hint}", FAILED
    return internal_line(exc), FAILED  # a bug: still one line, the traceback kept aside


def run_main(
    invoke: Callable[[], Any], on_failure: Callable[[str, int], None] | None = None
) -> Any:
    """Run the command; every failure leaves through ``sys.exit`` with one line on stderr.
    ``on_failure`` gets that line and the exit code first (`kiln run`'s JSON result)."""
    try:
        with sigterm_unwinds():
            result = invoke()
            sys.stdout.flush()  # a reader that left is seen here, not as a warning at exit
            return result
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (BrokenPipeError, ReaderLeft):  # `kiln … | head`: the reader left; say nothing more
        # (of stdout or of stderr: `kiln run 2>&1 | head`; Python's flush of either at exit
        # would fail again, and exit 120)
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
            except (OSError, ValueError):
                pass
        sys.exit(BROKEN_PIPE)
    except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - each becomes one line
        line, code = failure_line(exc)
        line = safe(line, one_line=True)  # a path with a new line in it stays on the line
        if on_failure is not None:
            try:
                on_failure(line, code)
            except (OSError, ValueError):  # stdout is gone: stderr's line still says it
                pass
        _exit(line, code)
