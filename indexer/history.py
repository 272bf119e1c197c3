"""What the repository's own history says: earlier commits whose messages resemble a query point
at the files they changed.

A query like "redirect drops the auth header" often shares words with earlier fixes ("Strip
Authorization on cross-host redirects") that touched the file the new fix belongs in, even when
the code itself never says "redirect" near the bug. So ``Index.update`` records each commit on
``HEAD`` (message and files touched, merges excluded) in the index, and a search ranks the
commit messages by BM25 and spreads each similar commit's score over the source files it
changed (``history_votes``, which also says how often each candidate changed in the newest
commits). This module records the commits.

Only ``HEAD``'s history is read (in a workspace that is a sub-folder of a repository, the
commits that touched it, with paths relative to it), through ``git log`` with the repository's
hooks, fsmonitor, pager, signature checks and every transport (a partial clone's on-demand fetch)
disabled (a cloned repository's config must not get
to run a program); a folder that is not a git work tree (or a machine without git)
simply has no history signal, and so has one whose ``.git`` file leads out of its tree to a
repository that is not its own, or whose ``objects/info/alternates`` borrows objects from out of
it, or another user's repository (``indexer.git_dir``). Syncing is incremental: when the
recorded head is an ancestor of the new one only the commits in between are read; otherwise (a checkout of another branch, a
rebase) the table is rebuilt from the new head. git's output is read a piece at a time and a
message is kept to its first ``MAX_MESSAGE_BYTES``, so a message of any size costs no more.
"""

from __future__ import annotations

import codecs
import os
import re
import secrets
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from indexer import git_dir, git_files
from indexer import weights as W
from indexer.tokens import camel_parts
from kiln_errors.host_path import host_env

_GIT_TIMEOUT = 60.0
# Issue numbers, URLs and hashes name tickets and commits, not code: "(#12)", "gh-12", "word#12"
# (a "#" right after a word character: ``\b`` before "#"), URLs, and words of 7-40 hex digits.
# Each alternative starts with a character, its ``\b`` a look-behind after it, so the regular
# expression engine skips to the characters that can start one (~45 % less CPU over every
# message of 11 repositories, the same text out: ``tests/indexer/test_history_ingest.py``).
_NOISE = re.compile(
    r"\(\s*#\d+\s*\)|g(?<!\wg)h-\d+\b|#(?<=\w#)\d+\b|h(?<!\wh)ttps?://\S+"
    r"|[0-9a-f](?<!\w[0-9a-f])[0-9a-f]{6,39}\b"
)
# A recorded head is only trusted as a full SHA-1 or SHA-256 hash: anything else (a revision
# expression, an abbreviated hash, an option) that a shipped index holds means no recorded head.
_COMMIT_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_FIELD = "\x1f"  # between the hash, the time and the message: neither holds one
MAX_MESSAGE_BYTES = 8192
"""The first bytes of a commit message that are recorded: its subject and the start of its
body, all the history signal matches queries on; the rest is read past, never held. git stores
a message of any size, and one of 64 MB was read whole, then decoded, split and stored in
copies (`kiln index` ended in a MemoryError under 1 GB of address space, and the index grew by
146 MB). The longest message in click's and httpx's histories is 4.6 kB."""
# A piece of ``git log -z`` output (a commit's header and message, or a path) longer than this
# is cut: room for the markers, the hash and the time around a message cut to its bound. A path
# this long cannot name an indexed file (``files.MAX_PATH_CHARS``) and is dropped.
_MAX_PIECE = MAX_MESSAGE_BYTES + 256
_READ_BYTES = 1 << 20  # how much of git's output is read at a time


def _git_command(root: Path, *args: str, stdout: Any) -> subprocess.Popen[bytes]:
    """A read-only git command started in ``root`` (raises OSError when git is missing)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_TERMINAL_PROMPT"] = "0"
    # No transport: a partial clone's config would fetch a missing object from its promisor
    # remote, and an ``ext::`` remote is a command (a config's protocol.ext.allow outranks -c).
    env["GIT_ALLOW_PROTOCOL"] = ""
    env = host_env([root], env)  # no git a command dropped into a workspace folder on PATH
    cmd = [
        "git",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "log.showSignature=false",  # a repository's config could name any gpg.program
        "-c",
        "core.quotePath=false",  # non-ASCII paths as they are, not as "caf\303\251.py"
        "--no-pager",
        *args,
    ]
    return subprocess.Popen(
        cmd, cwd=root, env=env, stdout=stdout, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )


def _git(root: Path, *args: str) -> str | None:
    """stdout of a read-only git command in ``root``; None when git is missing or fails."""
    try:
        with _git_command(root, *args, stdout=subprocess.PIPE) as proc:
            try:
                out, _ = proc.communicate(timeout=_GIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                return None
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return out.decode("utf-8", errors="replace")


def head(root: Path) -> str | None:
    """The commit ``HEAD`` names, or None outside a git work tree (or one with no commits), or
    when the repository git would read there is not the workspace's to read (``git_dir``)."""
    if not git_dir.readable(root):
        return None
    out = _git(root, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    return out.strip() or None if out else None


def _markers() -> tuple[str, str]:
    """Where a commit's record and its file list start in ``git log``'s output. A commit
    message can hold any character but NUL, so the markers carry a token drawn for each
    reading: a message that held the fixed ``\x1e`` and ``\x1d`` split its commit in two and
    stopped every `kiln index` with an internal error (a time that was no number)."""
    token = secrets.token_hex(8)
    return f"\x1e{token}\x1e", f"\x1d{token}\x1d"


def _log_format(record: str, files: str) -> str:
    return f"--format={record}%H{_FIELD}%ct{_FIELD}%B{files}"


def _pieces(
    out: IO[bytes], cap: int, read_bytes: int = _READ_BYTES
) -> Iterator[tuple[bytes, bool]]:
    """The NUL-ended pieces of ``out`` in order, each cut to its first ``cap`` bytes, with
    whether it was cut: read ``read_bytes`` at a time, so a piece of any length costs ``cap``."""
    held: list[bytes] = []  # the start of the piece being read, at most ``cap`` bytes
    size = 0  # its length so far, held or not
    while chunk := out.read(read_bytes):
        *ended, last = chunk.split(b"\0")
        for part in ended:
            if size:  # the piece began in an earlier chunk
                yield b"".join([*held, part[: cap - min(size, cap)]]), size + len(part) > cap
                held, size = [], 0
            elif len(part) <= cap:
                yield part, False
            else:
                yield part[:cap], True
        if last and size < cap:
            held.append(last[: cap - size])
        size += len(last)
    if size:
        yield b"".join(held), size > cap


def _parse_log(
    pieces: Iterable[tuple[bytes, bool]], record_mark: str, files_mark: str
) -> list[tuple[str, int, str, list[str]]]:
    """The commits of ``git log -z --name-only`` output, cut into ``pieces`` at each NUL: a
    record (its marker, the hash, the time, the message, the files marker), then the paths,
    the first after a new line (as they are: no quotes around a new line). A message is kept
    to its first ``MAX_MESSAGE_BYTES``; a path that was cut is dropped."""
    record, files_at = record_mark.encode(), files_mark.encode()
    commits: list[tuple[str, int, str, list[str]]] = []
    header: tuple[str, int, str] | None = None
    names: list[bytes] = []  # the record's paths, decoded together when it ends

    def close() -> None:
        if header is not None and names:
            names[0] = names[0].removeprefix(b"\n")  # git puts a new line before the first
            text = b"\0".join(names).decode("utf-8", errors="replace")
            files = sorted({name for name in text.split("\0") if name.strip()})
            if files:
                commits.append((*header, files))

    for piece, cut in pieces:
        if piece.startswith(record):
            close()
            header, names = _header(piece[len(record) :], cut, files_at), []
        else:  # a path that was cut names no indexed file: an empty one keeps the first first
            names.append(b"" if cut else piece)
    close()
    return commits


def _header(raw: bytes, cut: bool, files_mark: bytes) -> tuple[str, int, str] | None:
    """(hash, time, message) of a record's header after its marker; None when it lacks the
    files marker (never, from git). A header that was ``cut`` lost the marker with the end of
    its message, which is bounded to ``MAX_MESSAGE_BYTES`` whether it was cut or not."""
    if not cut:
        if not raw.endswith(files_mark):
            return None
        raw = raw[: -len(files_mark)]
    fields = raw.split(_FIELD.encode(), 2)
    if len(fields) < 3:
        return None
    sha, when, message = fields
    if len(message) > MAX_MESSAGE_BYTES:  # an incomplete last character is left out
        text = codecs.getincrementaldecoder("utf-8")("replace").decode(message[:MAX_MESSAGE_BYTES])
    else:
        text = message.decode("utf-8", errors="replace")
    return sha.decode("ascii", errors="replace"), int(when or 0), text.strip()


@dataclass
class Reading:
    """The commits new on ``HEAD`` being listed by a ``git log`` that runs in the background
    (``start``), so a full index parses files while git walks the history; ``finish`` records
    them. ``proc`` is None when there is nothing to read (an empty history, no git)."""

    new_head: str | None
    rebuild: bool
    old_head: str | None = None  # the head recorded when the reading started
    proc: subprocess.Popen[bytes] | None = None
    out: Any = None  # the temporary file git writes to (a pipe would stall it when full)
    marks: tuple[str, str] = ("", "")  # see ``_markers``

    def done(self) -> bool:
        """Whether git has finished listing (``finish`` would not wait)."""
        return self.proc is None or self.proc.poll() is not None

    def commits(self) -> list[tuple[str, int, str, list[str]]] | None:
        """The listed commits, newest first; None when git failed part-way."""
        if self.proc is None:
            return []
        try:
            self.proc.wait(timeout=_GIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.close()
            return None
        if self.proc.returncode != 0:
            self.close()
            return None
        self.out.seek(0)
        try:  # a piece at a time: a message of any size costs ``MAX_MESSAGE_BYTES``
            return _parse_log(_pieces(self.out, _MAX_PIECE), *self.marks)
        finally:
            self.close()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.out is not None:
            self.out.close()


def start(conn: sqlite3.Connection, root: Path, notes: list[str] | None = None) -> Reading | None:
    """Start listing the commits ``HEAD`` has beyond the recorded head; None when the
    recorded history is already ``HEAD``'s, or when git would wait on a file that is a FIFO or
    a device (``git_files``: the recorded history stays, and ``notes`` gets the reason). A
    ``.git`` leading out of the tree (``git_dir.led_out``) records none, its reason in ``notes``."""
    stuck = git_files.blocker(root) if git_dir.readable(root) else None
    if stuck is not None:
        if notes is not None:
            notes.append(stuck)
        return None
    if notes is not None and (refused := git_dir.led_out(root)) is not None:
        notes.append(refused)  # nothing recorded (``head`` is None), said as a file left out is
    new_head = head(root)
    row = conn.execute("SELECT value FROM meta WHERE key = 'history_head'").fetchone()
    old_head = row[0] if row else None
    if new_head == old_head:
        return None
    reading = Reading(new_head, rebuild=True, old_head=old_head)
    if not new_head:
        return reading
    revision = new_head
    if old_head and _COMMIT_HASH.fullmatch(str(old_head)):  # a shipped index could hold "HEAD~1"
        fast_forward = _git(root, "merge-base", "--is-ancestor", old_head, new_head)
        if fast_forward is not None:  # exit 0: the old head is an ancestor
            reading.rebuild, revision = False, f"{old_head}..{new_head}"
    out = tempfile.TemporaryFile()  # noqa: SIM115 - outlives this call; Reading closes it
    reading.marks = _markers()
    try:
        reading.proc = _git_command(
            root,
            "log",
            "--no-merges",
            "--no-renames",
            f"--max-count={W.HISTORY_MAX_COMMITS}",
            _log_format(*reading.marks),
            "-z",  # paths as they are: a new line in a name is not quoted as "a\\nb.py"
            "--name-only",
            "--relative",  # paths relative to the workspace; commits outside it list no files
            revision,
            "--",
            stdout=out,
        )
    except OSError:  # git went missing: record nothing, try again next time
        out.close()
        return None
    reading.out = out
    return reading


def sync(conn: sqlite3.Connection, root: Path) -> int:
    """Bring the recorded history in line with ``HEAD``; returns how many commits were added.
    Runs its own transaction, so a failure leaves the previous history in place."""
    reading = start(conn, root)
    return finish(conn, reading) if reading is not None else 0


def finish(conn: sqlite3.Connection, reading: Reading) -> int:
    """Record what ``reading`` listed (in one transaction); returns how many commits."""
    commits = reading.commits()
    if commits is None:  # git failed part-way: keep what is recorded, try again next time
        return 0
    new_head = reading.new_head
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'history_head'").fetchone()
        if (row[0] if row else None) != reading.old_head:  # another sync recorded in between
            conn.execute("ROLLBACK")
            return 0
        if reading.rebuild:
            conn.execute("DELETE FROM commits")
            conn.execute("DELETE FROM commit_files")
            conn.execute("DELETE FROM commits_fts")
        _record(conn, commits)
        if new_head:
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('history_head', ?)", (new_head,))
        else:
            conn.execute("DELETE FROM meta WHERE key = 'history_head'")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite already rolled back (a full disk)
            conn.execute("ROLLBACK")
        raise
    return len(commits)


def _record(conn: sqlite3.Connection, commits: list[tuple[str, int, str, list[str]]]) -> None:
    """Insert the commits not recorded yet, oldest first (ids follow time), table by table:
    three ``executemany`` instead of three statements per commit. Ids are given as SQLite
    would give them (the largest plus one, in order), and a commit already recorded (by sha)
    is left as it is, as ``INSERT OR IGNORE`` one by one did."""
    new: dict[str, tuple[int, str, list[str]]] = {}
    for sha, when, message, files in reversed(commits):
        new.setdefault(sha, (when, message, files))
    shas = list(new)
    for i in range(0, len(shas), 500):
        part = shas[i : i + 500]
        marks = ",".join("?" * len(part))
        for (sha,) in conn.execute(f"SELECT sha FROM commits WHERE sha IN ({marks})", part):
            del new[sha]
    first = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM commits").fetchone()[0]
    rows = [
        (commit_id, sha, when, _NOISE.sub(" ", message), files)
        for commit_id, (sha, (when, message, files)) in enumerate(new.items(), first)
    ]
    conn.executemany(
        "INSERT INTO commits (id, sha, time, message, files) VALUES (?, ?, ?, ?, ?)",
        [(commit_id, sha, when, text, len(files)) for commit_id, sha, when, text, files in rows],
    )
    conn.executemany(
        "INSERT INTO commits_fts (rowid, message) VALUES (?, ?)",
        [(commit_id, text + "\n" + camel_parts(text)) for commit_id, _, _, text, _ in rows],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO commit_files VALUES (?, ?)",
        [(commit_id, path) for commit_id, _, _, _, files in rows for path in files],
    )
