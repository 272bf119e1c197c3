"""The candidates' BM25 over every query term (``indexer/rescore.py``) against FTS5's own."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index, block_terms, ranking
from indexer import rescore as rescore_module
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
        "def feed(zebra):\n    # the grazing herd of a zebra\n    return zebra\n",
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


def _fts_order(conn: sqlite3.Connection, terms: list[str]) -> list[int]:
    """Every block matching any of ``terms``, in FTS5's own ``bm25()`` order over all of them."""
    weights = ", ".join(str(W.COLUMN_WEIGHTS[c]) for c in FTS_COLUMNS)
    sql = (
        f"SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ? "
        f"ORDER BY bm25(blocks_fts, {weights}), rowid"
    )
    return [r[0] for r in conn.execute(sql, (fts_match(terms),))]


def test_the_whole_candidate_list_is_in_bm25_order_even_its_last_read(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The search reads every candidate's text before ordering them (no early stop): the block
    # best over every term is the *last* in the order of the rare term the candidates were
    # found by, so a re-ranking that stopped once it had read the first k (or bounded the
    # common term's share too low) would miss it; and the search uses every rank of the list
    # (fusion, seeds, file list), not the top k alone.
    for n in range(5):  # the rare word, repeated in short bodies: high on it alone
        zebras = " ".join(["zebra"] * (5 - n))
        write(repo, f"z/stripes{n}.py", f"def stripes_{n}():\n    # {zebras}\n    return {n}\n")
    write(  # the rare word once in a long body, the common one in its name and signature
        repo,
        "h/herd.py",
        "def herd_herd_herd(herd, herd_size, herd_name):\n    # zebra\n"
        + "".join(f"    value_{n} = compute_{n}(x)\n" for n in range(40))
        + "    return value_0\n",
    )
    for n in range(6):  # the common words alone
        write(repo, f"c/herd{n}.py", f"def graze_{n}():\n    # herd\n    return {n}\n")
    for n in range(30):  # neither: the common words in fewer than half the blocks
        write(repo, f"d/filler{n}.py", f"def g{n}(x):\n    return x + {n}\n")
    open_index(repo).update()
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    monkeypatch.setattr(W, "MATCH_DOC_BUDGET", 6)  # room for "zebra" (6 blocks) alone
    terms = query_terms("zebra herd graze")  # no block holds all three: none comes first
    rare = _fts_order(conn, ["zebra"])
    herd = conn.execute("SELECT id FROM blocks WHERE path = 'h/herd.py'").fetchone()[0]
    assert len(rare) == 6 and rare[-1] == herd  # last on the rare word alone
    lexical = ranking._lexical(conn, terms, 3, {})
    everything = _fts_order(conn, terms)
    assert lexical == [i for i in everything if i in set(rare)]  # every rank, not the top k
    assert lexical[0] == herd


def test_a_tokens_weights_added_up_once_give_the_same_shares_in_the_same_order(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A token's column weights are added up once per block (``block_terms.Block.tokens``):
    # that must give each term the float that adding them one by one in text order gives,
    # and keep the order in which the terms first come, which decides the order of the sum.
    # "type" and "typo" share a term start, and their tokens interleave across the columns.
    write(
        repo,
        "t/kinds.py",
        "def typo_types(typed, typo):\n    '''Types: a typo typo in a type.'''\n"
        "    return [typed, typo, types, typing, typo]\n",
    )
    write(
        repo,
        "t/other.py",
        "def type_typos(types):\n    '''Typo first, then type.'''\n    return typos + types\n",
    )
    open_index(repo).update()
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    ids = [r[0] for r in conn.execute("SELECT id FROM blocks ORDER BY id")]
    idf = {"type": 1.5, "typo": 2.5}
    leads = [b" typ"]

    def shares() -> list[list[tuple[str, float]]]:
        return [
            list(rescore_module._frequencies(block, leads, idf, {}).items())
            for block in block_terms.read(conn, ids).values()
        ]

    assert block_terms._EXACT  # the column weights are multiples of 0.5
    summed = shares()
    monkeypatch.setattr(block_terms, "_EXACT", False)  # one entry per occurrence
    assert shares() == summed
    assert {tuple(t for t, _ in held) for held in summed} == {("typo", "type"), ("type", "typo")}
