"""Recording the history in bulk: the commits land table by table with the ids and rows they had
when each was inserted on its own, and the noise taken out of messages is what the plain
word-boundary rule takes out. Real git repositories and real SQLite files."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from indexer import Index, history, schema

from .test_history import commit, init

# The rule as first written: ticket numbers, URLs and hashes, each behind a word boundary.
PLAIN = re.compile(r"\(\s*#\d+\s*\)|\b(gh-|#)\d+\b|\bhttps?://\S+|\b[0-9a-f]{7,40}\b")


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="abcdefgh0123456789#()-:/ _.x\tαé\n", max_size=40))
def test_the_noise_pattern_takes_out_what_the_plain_rule_does(text: str) -> None:
    assert history._NOISE.sub(" ", text) == PLAIN.sub(" ", text)


@settings(max_examples=2000, deadline=None)
@given(
    st.binary(max_size=60).map(lambda b: b.replace(b"\1", b"\0")),
    st.integers(1, 12),
    st.integers(1, 9),
)
def test_git_output_read_a_chunk_at_a_time_gives_its_pieces_cut(
    data: bytes, cap: int, read_bytes: int
) -> None:
    """``git log -z`` output is read in chunks, a piece (a message, a path) held only to its
    first ``cap`` bytes: the pieces are those of splitting it whole, wherever a chunk ends."""
    whole = data.split(b"\0")
    if whole[-1] == b"":  # the NUL that ends the last piece
        whole.pop()
    pieces = list(history._pieces(io.BytesIO(data), cap, read_bytes))
    assert pieces == [(piece[:cap], len(piece) > cap) for piece in whole]


def test_tickets_urls_and_hashes_leave_the_message() -> None:
    message = (
        "Fix pool reset (#123) and gh-45, see issue#77 not #78; "
        "https://example.org/x?a=1 deadbeef1 1234567 cafe abcdefg"
    )
    assert history._NOISE.sub(" ", message) == PLAIN.sub(" ", message)
    kept = history._NOISE.sub(" ", message).split()
    assert kept == [
        "Fix",
        "pool",
        "reset",
        "and",
        ",",
        "see",
        "issue",
        "not",
        "#78;",
        "cafe",
        "abcdefg",
    ]


def test_a_history_is_recorded_oldest_first_with_its_files(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    init(repo)
    first = commit(repo, "Add the ledger (#1)", {"ledger.py": "x = 1\n", "notes.md": "n\n"})
    second = commit(repo, "Round ledger totals", {"ledger.py": "x = 2\n"})
    idx = open_index(repo)
    assert idx.update().commits == 2
    third = commit(repo, "Close the ledger see 0123456789abcdef", {"close.py": "y = 1\n"})
    assert idx.update().commits == 1
    rows = idx._conn.execute("SELECT id, sha, message, files FROM commits ORDER BY id").fetchall()
    assert rows == [
        (1, first, "Add the ledger  ", 2),
        (2, second, "Round ledger totals", 1),
        (3, third, "Close the ledger see  ", 1),
    ]
    files = idx._conn.execute("SELECT commit_id, path FROM commit_files ORDER BY 1, 2").fetchall()
    assert files == [(1, "ledger.py"), (1, "notes.md"), (2, "ledger.py"), (3, "close.py")]
    found = idx._conn.execute(
        "SELECT rowid FROM commits_fts WHERE commits_fts MATCH 'ledger' ORDER BY rowid"
    ).fetchall()
    assert found == [(1,), (2,), (3,)]


def test_commits_already_recorded_are_left_as_they_are(tmp_path: Path) -> None:
    conn = schema.connect(tmp_path / "index.db", 5.0)
    schema.migrate(conn)
    listed = [("c" * 40, 30, "Third", ["c.py"]), ("b" * 40, 20, "Second", ["b.py", "a.py"])]
    history._record(conn, listed)  # newest first, as git lists them
    again = [("d" * 40, 40, "Fourth gh-9", ["d.py"]), ("c" * 40, 30, "Third, edited", ["x.py"])]
    history._record(conn, [*again, ("d" * 40, 40, "Fourth twice", ["e.py"])])
    rows = conn.execute("SELECT id, sha, time, message, files FROM commits ORDER BY id").fetchall()
    assert rows == [
        (1, "b" * 40, 20, "Second", 2),
        (2, "c" * 40, 30, "Third", 1),
        (3, "d" * 40, 40, "Fourth twice", 1),  # the oldest listing of a sha is the one kept
    ]
    files = conn.execute("SELECT commit_id, path FROM commit_files ORDER BY 1, 2").fetchall()
    assert files == [(1, "a.py"), (1, "b.py"), (2, "c.py"), (3, "e.py")]
    assert conn.execute("SELECT count(*) FROM commits_fts").fetchone()[0] == 3
    conn.close()
