"""The candidates' BM25 over every query term (``indexer/rescore.py``) against FTS5's own."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer import weights as W
from indexer.rescore import rescore, statistics
from indexer.store import FTS_COLUMNS
from indexer.tokens import fts_match, query_terms, vocabulary_term

from .conftest import write

BLOCKS = {
    "fmt/comments.py": "def format_comments(node):\n    # leading comments before the node\n"
    "    return [c for c in node.comments if c.leading]\n",
    "fmt/important.py": "def print_important(flag):\n    # !important, printed last\n"
    "    return ' !important' if flag else ''\n",
    "fmt/both.py": "def comments_before_important(decl):\n    # comments before !important stay\n"
    "    return decl.comments + decl.important_comments\n",
    "parse/lexer.py": "class Lexer:\n    def formatting(self):\n        return 'formatted'\n",
    "parse/tokens.py": "TOKENS = ['comment', 'importance', 'formats']\n",
    # capitals, and a text column of more than 127 tokens (its length takes two varint bytes)
    "fmt/long.py": "def Format_Long_Comments(Node):\n    return [\n"
    + "".join(f"        Node.Value{n}, 'Important {n}',\n" for n in range(120))
    + "    ]\n",
}


def _index(repo: Path, open_index: Callable[..., Index]) -> tuple[Index, sqlite3.Connection]:
    for path, text in BLOCKS.items():
        write(repo, path, text)
    idx = open_index(repo)
    idx.update()
    return idx, sqlite3.connect(repo / ".kiln" / "index.db")


def test_the_order_is_fts5s_bm25_over_every_term(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _, conn = _index(repo, open_index)
    terms = query_terms("format comments before important")
    df = {}
    for term in terms:
        row = conn.execute("SELECT doc FROM blocks_vocab WHERE term = ?", (vocabulary_term(term),))
        df[term] = (row.fetchone() or [0])[0]
    weights = ", ".join(str(W.COLUMN_WEIGHTS[c]) for c in FTS_COLUMNS)
    fts = [
        r[0]
        for r in conn.execute(
            f"SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ? "
            f"ORDER BY bm25(blocks_fts, {weights}), rowid",
            (fts_match(terms),),
        )
    ]
    assert len(fts) >= 4  # the words are spread over most blocks
    assert rescore(conn, sorted(fts), terms, df) == fts
    rows, average = statistics(conn)
    assert rows == conn.execute("SELECT COUNT(*) FROM blocks_fts").fetchone()[0]
    assert average > 5


def test_a_block_holding_every_word_beats_one_repeating_the_rarest(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # "zebra" is the rarest word and the budget leaves room for it alone, as on a large tree;
    # no block holds every word (those would come first whatever the order)
    write(repo, "a/stripes.py", "def stripes():\n    # zebra zebra zebra zebra\n    return 1\n")
    write(
        repo,
        "b/herd.py",
        "def graze(zebra):\n    # the grazing herd of a zebra\n    return zebra\n",
    )
    for n in range(4):  # the other words are commoner
        write(repo, f"c/other{n}.py", f"def f{n}():\n    # count grazing herd\n    return {n}\n")
    for n in range(30):  # and the tree is larger than that
        write(repo, f"d/filler{n}.py", f"def g{n}(x):\n    return x + {n}\n")
    idx = open_index(repo)
    idx.update()
    monkeypatch.setattr(W, "MATCH_DOC_BUDGET", 2)
    monkeypatch.setattr(W, "FILE_LIST_WEIGHT", 0.0)
    query = "count the grazing herd of a zebra"
    assert idx.search(query, 1)[0].path == "b/herd.py"
    monkeypatch.setattr(W, "RESCORE_ALL_TERMS", False)  # the rarest word's order alone
    assert idx.search(query, 1)[0].path == "a/stripes.py"
