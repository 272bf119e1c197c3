"""What the re-ranking keeps of each candidate block across the writer's searches
(``indexer/block_terms.py``) never outlives the rows it was read from: after an edit that
rewrites a block in place, one that removes a block and gives its row id to a new one, a
whole-file write and another connection's write, the next search has the hits and scores of
a search that reads everything afresh. Real index files; the budget is lowered so that the
search leaves a common word out and re-ranks its candidates, as on a large tree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index, ranking
from indexer import weights as W

from .conftest import write

QUERY = "tally beta"  # "tally" is the rarer word: "beta" is left out and re-ranked


def body(name: str, betas: int) -> str:
    words = " ".join(["beta"] * betas)
    return f"def {name}(x):\n    x.note = 'tally {words}'\n    return x\n\n\n"


def hits(idx: Index, *, fresh: bool = False) -> list[tuple]:
    """(path, first line, name, score) of each hit: through the index's writer and what it
    keeps, or on a reader that keeps nothing."""
    found = ranking.search(idx._reader(), QUERY, 10) if fresh else idx.search(QUERY, 10)
    return [(h.path, h.start_line, h.name, h.score) for h in found]


def same_as_fresh(idx: Index) -> list[tuple]:
    kept = hits(idx)
    assert kept == hits(idx, fresh=True)
    return kept


@pytest.fixture
def idx(repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch) -> Index:
    monkeypatch.setattr(W, "MATCH_DOC_BUDGET", 2)
    write(repo, "a.py", body("first", 1) + body("second", 2) + body("third", 3))
    for n in range(6):  # "beta" alone: the commoner word
        write(repo, f"beta{n}.py", f"def beta_{n}(x):\n    # beta\n    return x + {n}\n")
    for n in range(20):  # neither: "beta" is in fewer than half the blocks (a positive IDF)
        write(repo, f"other{n}.py", f"def other_{n}(x):\n    return x * {n}\n")
    index = open_index(repo)
    index.update()
    index.update_file("b.py", body("fourth", 4) + body("fifth", 1))  # the highest row ids
    return index


def test_a_block_rewritten_in_place_is_read_again(repo: Path, idx: Index) -> None:
    text = (repo / "a.py").read_text()
    idx.update_file("a.py", text)  # the editor opens the file: its edits are spliced
    before = same_as_fresh(idx)
    first = idx._conn.execute("SELECT id FROM block_rows WHERE name = 'first'").fetchone()
    # "first" keeps its row id, with eight betas now (no word comes or goes)
    idx.update_file("a.py", text.replace("'tally beta'", "'tally" + " beta" * 8 + "'"))
    assert idx._conn.execute("SELECT id FROM block_rows WHERE name = 'first'").fetchone() == first
    assert same_as_fresh(idx) != before


def test_a_reused_row_id_is_not_served_the_removed_blocks_terms(idx: Index) -> None:
    before = same_as_fresh(idx)
    (last,) = idx._conn.execute("SELECT MAX(id) FROM block_rows").fetchone()
    name = "SELECT name FROM block_rows WHERE id = ?"
    assert idx._conn.execute(name, (last,)).fetchone() == ("fifth",)
    idx.update_file("b.py", body("fourth", 4))  # "fifth" goes: its id is free
    same_as_fresh(idx)
    idx.update_file("c.py", body("sixth", 8))  # a new file: its block takes that id
    assert idx._conn.execute(name, (last,)).fetchone() == ("sixth",)
    assert same_as_fresh(idx) != before


def test_a_whole_file_write_and_another_writer_reach_the_next_search(
    repo: Path, idx: Index
) -> None:
    before = same_as_fresh(idx)
    # two functions change at once: the file is written whole, not spliced
    text = (repo / "a.py").read_text()
    edited = text.replace("'tally beta'", "'tally" + " beta" * 8 + "'")
    edited = edited.replace("'tally beta beta beta'", "'tally beta'")
    idx.update_file("a.py", edited)
    after = same_as_fresh(idx)
    assert after != before
    other = Index(repo)  # another process's connection writes the file back
    try:
        other.update_file("a.py", text)
    finally:
        other.close()
    assert same_as_fresh(idx) != after
