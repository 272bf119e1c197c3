"""The file list (indexer/filelist.py): a row of distinct words per file, kept with the file's
blocks through full runs, edits, deletes and renames, filled in for indexes made before it,
and searched with every query term when block-level BM25 had to leave terms out."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer import Index
from indexer import weights as W
from indexer.schema import MIGRATION_SET

from .conftest import write


def file_rows(db: Path) -> dict[str, set[str]]:
    conn = sqlite3.connect(db)
    try:
        conn.execute("INSERT INTO files_fts(files_fts, rank) VALUES ('integrity-check', 1)")
        rows = conn.execute(
            "SELECT f.path, w.words FROM files_fts w JOIN files f ON f.id = w.rowid"
        ).fetchall()
        return {path: set(words.split()) for path, words in rows}
    finally:
        conn.close()


def test_a_file_row_holds_its_path_names_and_code_words(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(
        repo,
        "pkg/userStore.py",
        '''
        def loadProfile(user_id):
            """Fetch the profile."""
            cache = LruCache(64)
            return cache.get(user_id)  # cold path
        ''',
    )
    write(repo, "image.bin", "\x00\x01 binary")
    idx = open_index(repo)
    idx.update()
    rows = file_rows(idx.db_path)
    assert set(rows) == {"pkg/userStore.py"}  # a file without blocks has no row
    words = rows["pkg/userStore.py"]
    assert {"pkg", "userstore", "user", "store", "py"} <= words  # the path
    assert {"loadprofile", "load", "profile", "user_id", "fetch"} <= words  # names, docstring
    assert {"lrucache", "lru", "cache", "cold", "path", "64"} <= words  # the code


def test_rows_follow_edits_deletes_and_renames(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "gone.py", "def vanishing_symbol():\n    pass\n")
    write(repo, "old/place.py", "def wandering_symbol():\n    pass\n")
    idx = open_index(repo)
    idx.update()
    assert set(file_rows(idx.db_path)) == {"gone.py", "old/place.py"}
    (repo / "gone.py").unlink()
    (repo / "new").mkdir()
    (repo / "old" / "place.py").rename(repo / "new" / "place.py")
    idx.update()
    rows = file_rows(idx.db_path)
    assert set(rows) == {"new/place.py"}
    assert {"new", "wandering_symbol"} <= rows["new/place.py"] and "old" not in rows["new/place.py"]
    idx.update_file("new/place.py", "def settled_symbol():\n    return 1\n")
    words = file_rows(idx.db_path)["new/place.py"]
    assert "settled_symbol" in words and "wandering_symbol" not in words
    idx.remove_file("new/place.py")
    assert file_rows(idx.db_path) == {}


def test_an_index_made_before_the_file_list_gets_it_on_open(repo: Path) -> None:
    write(repo, "a.py", "def alpha_handler(request):\n    return request.body\n")
    write(repo, "lib/b.py", "class BetaWidget:\n    def render(self):\n        return 'ok'\n")
    with Index(repo) as idx:
        idx.update()
        db = idx.db_path
    expected = file_rows(db)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE files_vocab")
    conn.execute("DROP TABLE files_fts")
    conn.execute(
        "DELETE FROM _sqlite_migrations WHERE migration_set = ? AND name = 'm007_file_words'",
        (MIGRATION_SET,),
    )
    conn.commit()
    conn.close()
    with Index(repo) as idx:
        assert [h.name for h in idx.search("beta widget render")][:1] == ["BetaWidget.render"]
    assert file_rows(db) == expected and {"beta", "widget"} <= expected["lib/b.py"]


def _tree(repo: Path) -> None:
    """A file holding four of the query's five words, none of them the rarest; the rarest
    word only in a file that holds nothing else of the query; filler files for bulk."""
    write(
        repo,
        "ui/painter.py",
        """
        def paint_frame(canvas):
            render(widget, border, color)

        def unrelated_helper():
            return 0
        """,
    )
    write(repo, "misc/notes.py", "def frobnicate():\n    return 1\n")
    for n, word in enumerate(("render", "widget", "border", "color")):
        write(repo, f"other/user_{n}.py", f"def call_{n}():\n    return {word}()\n")
    for n in range(40):
        write(repo, f"filler/mod_{n}.py", f"def filler_{n}(x):\n    return x + {n}\n")


def test_a_file_with_most_query_words_is_found_when_terms_are_left_out(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(repo)
    idx = open_index(repo)
    idx.update()
    monkeypatch.setattr(W, "MATCH_DOC_BUDGET", 1)  # block BM25 scores "frobnicate" alone
    query = "render widget border color frobnicate"
    with_list = idx.search(query, k=10)
    assert ("ui/painter.py", "paint_frame") in [(h.path, h.name) for h in with_list]
    assert "unrelated_helper" not in [h.name for h in with_list]  # the file's best block
    monkeypatch.setattr(W, "FILE_LIST_WEIGHT", 0.0)
    without = idx.search(query, k=10)
    assert "ui/painter.py" not in [h.path for h in without]


def test_the_file_list_stays_out_when_every_term_is_scored(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(repo)
    idx = open_index(repo)
    idx.update()
    query = "render widget border color frobnicate"
    default = [(h.path, h.name, h.score) for h in idx.search(query, k=10)]
    monkeypatch.setattr(W, "FILE_LIST_WEIGHT", 0.0)
    assert [(h.path, h.name, h.score) for h in idx.search(query, k=10)] == default


def test_an_edit_inside_a_function_keeps_the_row_a_recount_gives(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    from indexer import filelist

    body = "".join(
        f"def helper_{n}(items):\n    total = 0\n    return total\n\n\n" for n in range(40)
    )
    write(repo, "big.py", body)
    idx = open_index(repo)
    idx.update()
    conn = idx._conn
    file_id = conn.execute("SELECT id FROM files WHERE path = 'big.py'").fetchone()[0]

    def stored() -> str:
        idx.compact()  # what an idle editor does: rows edits left out of date are rewritten
        return conn.execute("SELECT words FROM files_fts WHERE rowid = ?", (file_id,)).fetchone()[0]

    def recount() -> str:
        blocks = conn.execute(
            "SELECT name, signature, docstring, text FROM block_rows WHERE file_id = ?", (file_id,)
        )
        return filelist.words("big.py", blocks)

    typed = body.replace("    total = 0\n", "    total = 0\n    freshWord = 1\n", 1)
    idx.update_file("big.py", typed)  # words only added: the stored row plus them
    assert {"freshword", "fresh", "word"} <= set(stored().split())
    assert stored() == recount()
    idx.update_file("big.py", body)  # a word leaves the file: recounted from the blocks
    assert "freshword" not in stored().split()
    assert stored() == recount()
    idx.update_file("big.py", body.replace("items", "elements", 1))  # one of two spellings
    assert {"items", "elements"} <= set(stored().split())
    assert stored() == recount()


def test_edits_inside_a_function_keep_the_row_a_fresh_index_has(
    tmp_path: Path, open_index: Callable[..., Index]
) -> None:
    """Typing in a function body updates the row from that function's text (spliced edits,
    the first counting the file's stored rows, the next the edited function alone): a word
    typed and then replaced leaves the row, as a fresh index of the text would have it."""
    from .test_rechunk import BASES

    repo, fresh = tmp_path / "repo", tmp_path / "fresh"
    repo.mkdir()
    fresh.mkdir()
    text = BASES["mod.py"]
    (repo / "mod.py").write_text(text)
    idx = open_index(repo)
    idx.update()
    anchor = "        result = value * 7\n"
    seen, ids = [], []
    for line in ("settle_refund(result)", "computeTotalAmount(result)", "pass"):
        edited = text.replace(anchor, f"{anchor}        {line}\n")
        idx.update_file("mod.py", edited)  # the first: whole file (no tree yet); then spliced
        idx.compact()  # the idle step rewrites the row the edit marked out of date
        seen.append(file_rows(idx.db_path)["mod.py"])
        ids.append({r[0] for r in sqlite3.connect(idx.db_path).execute("SELECT id FROM blocks")})
    assert ids[0] == ids[1] == ids[2]  # spliced: the function's rows rewritten in place
    assert "settle_refund" in seen[0] and "computetotalamount" not in seen[0]
    assert {"computetotalamount", "total", "amount"} <= seen[1] and "settle_refund" not in seen[1]
    assert not {"settle_refund", "computetotalamount", "amount"} & seen[2]
    (fresh / "mod.py").write_text(edited)
    full = open_index(fresh)
    full.update()
    assert seen[2] == file_rows(full.db_path)["mod.py"]


def test_an_edit_marks_the_row_and_an_idle_step_or_the_next_update_rewrites_it(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    """A spliced edit leaves the file's row as it was (rewriting it costs more than the rest
    of the edit) and marks it; the idle step (``compact``) rewrites it from the counts the
    edit kept, and an index opened later (no counts in memory) rewrites it from the stored
    rows on its next ``update``."""
    body = "".join(
        f"def helper_{n}(items):\n    total = 0\n    return total\n\n\n" for n in range(9)
    )
    write(repo, "big.py", body)
    idx = open_index(repo)
    idx.update()
    idx.update_file("big.py", body)  # the editor opens it: its tree and counts are kept
    typed = body.replace("    total = 0\n", "    total = 0\n    freshWord = 1\n", 1)
    idx.update_file("big.py", typed)

    def stale() -> list[tuple[int]]:
        return sqlite3.connect(idx.db_path).execute("SELECT file_id FROM files_stale").fetchall()

    assert "freshword" not in file_rows(idx.db_path)["big.py"]  # not yet rewritten ...
    assert len(stale()) == 1  # ... but marked
    assert idx.compact()
    assert {"freshword", "fresh", "word"} <= file_rows(idx.db_path)["big.py"]
    assert stale() == []

    idx.update_file("big.py", body)  # the word leaves; the session ends before an idle step
    assert len(stale()) == 1
    idx.close()
    later = open_index(repo)
    later.update()
    assert stale() == []
    assert not {"freshword", "fresh"} & file_rows(later.db_path)["big.py"]


def reference_words(path: str, blocks: list[tuple[str, str, str, str]]) -> str:
    """A file's row by its definition, token by token: every word lower-cased, and a
    camelCase word's parts too."""
    import re

    from indexer.tokens import split_identifier

    strings = [path, *(s for block in blocks for s in block)]
    data = "\n".join(s for s in strings if s).encode("utf-8", errors="replace")
    out: set[str] = set()
    for token in re.findall(rb"[A-Za-z0-9_\x80-\xff]+", data):
        word = token.decode("utf-8", errors="replace")
        out.add(word.lower())
        if not (word.islower() or word.isupper() or word[1:].islower()):
            out.update(split_identifier(word))
    return " ".join(sorted(out))


# "$" joins identifiers in the camelCase column's cut and ends words in the file list's; "Σ"
# lower-cases by its neighbours; a lone surrogate encodes differently in the two cuts.
WORD_ALPHABET = "aAbZz_$09 .(\n\u00e9\u00c9\u03a3\u01c5\u00a0\ufffd\ud800\u0130"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(*[st.text(alphabet=WORD_ALPHABET, max_size=24)] * 4), min_size=1, max_size=4)
)
def test_rows_prepared_for_writing_hold_the_words_by_their_definition(
    blocks: list[tuple[str, str, str, str]],
) -> None:
    """``rows.prepare`` builds the row from the runs it cut for the camelCase column (set
    operations over the tokens); ``filelist.words`` (edits, migrations) from the strings:
    both give the row a token-by-token reading gives."""
    from indexer import filelist
    from indexer.blocks import Block
    from indexer.rows import prepare

    path = "pkg/mod\u03a3Name.py"
    expected = reference_words(path, blocks)
    assert filelist.words(path, blocks) == expected
    made = [
        Block("function", name, sig, doc, 1, 1, text, "python") for name, sig, doc, text in blocks
    ]
    assert prepare(path, made).words == expected
