"""Re-chunking only the edited function gives exactly the blocks of a full chunk, on random
edit sequences in several languages, and the index keeps the rows of untouched blocks; after
any run of edits (on made-up modules and on real files) the index is a fresh index's."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer import Index
from indexer.chunker import chunk_file
from indexer.generated import says_generated
from indexer.incremental import TreeCache
from indexer.rechunk import chunk_edit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "langs"


def _python_module() -> str:
    long_body = "\n".join(f"    total += step_{i}(value)  # step {i}" for i in range(170))
    methods = "\n\n".join(
        f"    def method_{i}(self, value):\n        result = value * {i}\n        return result"
        for i in range(60)
    )
    return (
        '"""A module."""\n'
        "import os\n\n"
        "LIMIT = 3\n\n\n"
        "# attached to the class\n"
        "class Service:\n"
        '    """Does things."""\n\n'
        "    name = 'svc'\n\n"
        f"{methods}\n\n"
        "    def tiny(self): return 1\n"
        "    def tiny2(self): return 2\n\n"
        "    @property\n"
        "    def decorated(self):\n"
        "        def inner(x):\n            return x + 1\n"
        "        return inner(self.name)\n\n"
        "    class Nested:\n"
        "        def deep(self, a):\n            a += 1\n            return a\n\n\n"
        f"def long_function(value):\n    total = 0\n{long_body}\n    return total\n\n\n"
        "def helper(x):\n    if x:\n        return os.path.join(x, 'y')\n    return None\n\n\n"
        "if __name__ == '__main__':\n    helper(LIMIT)\n"
    )


BASES = {
    "mod.py": _python_module(),
    "sample.js": (FIXTURES / "sample.js").read_text() * 3,
    "sample.go": (FIXTURES / "sample.go").read_text(),
    "sample.rs": (FIXTURES / "sample.rs").read_text(),
    "Sample.java": (FIXTURES / "Sample.java").read_text(),
}
# Real files, as they stand in this checkout: a module of classes, dataclasses and long
# functions, one of many small functions and a class, and a TypeScript extension host.
_HERE = Path(__file__).resolve().parents[2]
REAL = {
    "rechunk.py": (_HERE / "indexer" / "rechunk.py").read_text(),
    "textsync.py": (_HERE / "lsp_server" / "lsp" / "textsync.py").read_text(),
    "extension.ts": (_HERE / "extensions" / "vscode" / "src" / "extension.ts").read_text(),
}
SNIPPETS = [
    "STATEMENT",  # three times: the common edit, which re-chunks one function
    "STATEMENT",
    "STATEMENT",
    "DROP_LINE",  # a whole line deleted: a body loses a statement and what it referenced
    "DROP_LINE",
    "x",
    "\n",
    "    y = 2\n",
    "        z = f(q)\n",
    "(",
    ")",
    "{",
    "}",
    '"',
    "#",
    "def ",
    ":",
    "GENERATED",  # a generator's words typed into the first lines: the file's flag flips
]


def shape(blocks: list) -> list[tuple]:
    return [
        (
            b.kind,
            b.name,
            b.start_line,
            b.end_line,
            b.signature,
            b.docstring,
            b.text,
            sorted(b.refs),
            b.defines,
        )
        for b in blocks
    ]


@st.composite
def edit_sequences(
    draw: st.DrawFn, bases: dict[str, str] = BASES, most: int = 6
) -> tuple[str, list[tuple[float, int, str]]]:
    path = draw(st.sampled_from(sorted(bases)))
    edits = draw(
        st.lists(
            st.tuples(
                st.floats(0, 1),  # where, as a share of the text
                st.integers(0, 12),  # characters removed there
                st.sampled_from(SNIPPETS) | st.text("ab \n(){}:", max_size=6),
            ),
            min_size=1,
            max_size=most,
        )
    )
    return path, edits


def _apply(text: str, where: float, cut: int, insert: str) -> str:
    at = int(where * len(text))
    lines_start = text.rfind("\n", 0, at) + 1
    if insert == "STATEMENT":  # a statement line typed above this one, at its indentation
        line = text[lines_start:].split("\n", 1)[0]
        indent = line[: len(line) - len(line.lstrip())]
        return text[:lines_start] + f"{indent}q = 1;\n" + text[lines_start:]
    if insert == "GENERATED":  # into the first line, where a header says it
        at = int(where * (text.find("\n") + 1))
        return text[:at] + "generated file" + text[at:]
    if insert == "DROP_LINE":
        return text[:lines_start] + text[lines_start:].partition("\n")[2]
    if insert.endswith("\n"):
        at = lines_start  # whole lines go in at a line start, as typed
    return text[:at] + insert + text[at + cut :]


def replay_edits(bases: dict[str, str], case: tuple) -> None:
    """Each edit of ``case`` re-chunked from the kept tree gives the blocks of a full chunk."""
    path, edits = case
    trees = TreeCache()
    text = bases[path]
    chunk_edit(trees, path, text.encode())
    for where, cut, insert in edits:
        text = _apply(text, where, cut, insert)
        data = text.encode()
        blocks, _ = chunk_edit(trees, path, data)
        assert shape(blocks) == shape(chunk_file(path, data)), (path, text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_sequences())
def test_random_edits_give_the_blocks_of_a_full_chunk(case: tuple) -> None:
    replay_edits(BASES, case)


def test_typing_inside_a_method_rechunks_only_that_method() -> None:
    trees = TreeCache()
    text = BASES["mod.py"]
    chunk_edit(trees, "mod.py", text.encode())
    for i in (3, 17, 42):
        anchor = f"        result = value * {i}\n"
        text = text.replace(anchor, anchor + f"        result += {i}\n        log(result)\n")
        blocks, splice = chunk_edit(trees, "mod.py", text.encode())
        assert splice is not None and [b.name for b in splice.blocks] == [f"Service.method_{i}"]
        assert splice.delta == 2
        assert shape(blocks) == shape(chunk_file("mod.py", text.encode()))
    body = "    total += step_99(value)  # step 99\n"
    text = text.replace(body, body + "    total -= 1\n")
    blocks, splice = chunk_edit(trees, "mod.py", text.encode())
    assert splice is not None and {b.name for b in splice.blocks} == {"long_function"}
    assert len(splice.blocks) >= 2  # a long function is split; all its parts are redone
    assert shape(blocks) == shape(chunk_file("mod.py", text.encode()))


def test_an_edit_in_a_signature_or_a_tiny_function_chunks_the_whole_file() -> None:
    trees = TreeCache()
    text = BASES["mod.py"]
    chunk_edit(trees, "mod.py", text.encode())
    for old, new in [
        ("def helper(x):", "def helper(x, y=1):"),
        ("def tiny(self): return 1", "def tiny(self): return 10"),
    ]:
        text = text.replace(old, new)
        blocks, splice = chunk_edit(trees, "mod.py", text.encode())
        assert splice is None
        assert shape(blocks) == shape(chunk_file("mod.py", text.encode()))


def _rows(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT id, path, kind, name, start_line, end_line, hash, text, refs, fts_name, idents"
            " FROM blocks ORDER BY path, start_line, end_line"
        ).fetchall()
    finally:
        conn.close()


def test_an_edit_keeps_the_rows_of_untouched_blocks_and_matches_a_full_index(
    tmp_path: Path, open_index: Callable[..., Index]
) -> None:
    repo, fresh = tmp_path / "repo", tmp_path / "fresh"
    repo.mkdir()
    fresh.mkdir()
    text = BASES["mod.py"]
    (repo / "mod.py").write_text(text)
    idx = open_index(repo)
    idx.update()
    idx.update_file("mod.py", text)  # an editor opens the file: its tree is cached
    before = {(r[3], r[6]): r for r in _rows(idx.db_path)}
    anchor = "        result = value * 7\n"
    text = text.replace(anchor, anchor + "        result = settle_refund(result)\n")
    idx.update_file("mod.py", text)
    after = _rows(idx.db_path)
    edited = [r for r in after if (r[3], r[6]) not in before]
    assert [r[3] for r in edited] == ["Service.method_7"]  # the only new row
    kept = [r for r in after if (r[3], r[6]) in before]
    assert len(kept) == len(before) - 1  # every other block kept its row id ...
    for row in kept:
        old = before[(row[3], row[6])]
        assert row[0] == old[0] and row[7:] == old[7:]
        moved = 1 if row[4] > edited[0][5] else 0  # ... and moved only if it lies below
        assert row[4] == old[4] + moved
    assert idx.search("settle refund")[0].name == "Service.method_7"

    (fresh / "mod.py").write_text(text)
    full = open_index(fresh)
    full.update()
    assert [r[1:] for r in after] == [r[1:] for r in _rows(full.db_path)]


def _state(db: Path) -> dict[str, object]:
    """What a search can see in an index file, row ids aside: blocks, the symbol rows by the
    block they point at, the files' rows (their ``generated`` flag too) and their rows in the
    file list, and FTS term counts of both (after FTS5's own check that its index matches the
    blocks' text, and a check that each file's flag is what its rows at line 1 say)."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('integrity-check', 1)")
        conn.execute("INSERT INTO files_fts(files_fts, rank) VALUES ('integrity-check', 1)")
        heads = conn.execute(
            "SELECT path, substr(text, 1, 300) FROM blocks WHERE start_line = 1"
        ).fetchall()
        said = {path for path, head in heads if says_generated(head)}
        stored = {path for (path,) in conn.execute("SELECT path FROM files WHERE generated")}
        assert stored == said
        block = "b.path, b.start_line, b.end_line, b.name"
        return {
            "blocks": conn.execute(
                "SELECT path, language, kind, name, signature, docstring, start_line, end_line,"
                " hash, text, refs, fts_path, fts_name, idents FROM blocks"
                " ORDER BY path, start_line, end_line, name"
            ).fetchall(),
            **{
                table: sorted(
                    conn.execute(
                        f"SELECT t.name, {block}, f.path FROM {table} t"
                        " JOIN blocks b ON b.id = t.block_id JOIN files f ON f.id = t.file_id"
                    ).fetchall()
                )
                for table in ("defs", "refs")
            },
            "files": conn.execute("SELECT path, hash, blocks, generated FROM files").fetchall(),
            "terms": conn.execute("SELECT term, doc, cnt FROM blocks_vocab").fetchall(),
            "file_list": conn.execute(
                "SELECT f.path, w.words FROM files_fts w JOIN files f ON f.id = w.rowid"
                " ORDER BY f.path"
            ).fetchall(),
            "file_terms": conn.execute("SELECT term, doc FROM files_vocab").fetchall(),
        }
    finally:
        conn.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_sequences())
def test_random_edits_leave_the_index_of_a_fresh_run(case: tuple) -> None:
    """Each edit goes through ``update_file`` (spliced when it can be); the index file ends up
    holding what a full index of the final text holds."""
    replay_into_index(BASES, case)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_sequences(REAL, most=12))
def test_random_edits_on_real_files_leave_the_index_of_a_fresh_run(case: tuple) -> None:
    """The same on real files (this checkout's own), with longer runs of edits."""
    replay_into_index(REAL, case)


def replay_into_index(bases: dict[str, str], case: tuple) -> None:
    path, edits = case
    with tempfile.TemporaryDirectory() as tmp:
        repo, fresh = Path(tmp, "repo"), Path(tmp, "fresh")
        repo.mkdir()
        fresh.mkdir()
        text = bases[path]
        (repo / path).write_text(text)
        with Index(repo) as idx:
            idx.update()
            idx.update_file(path, text)
            for where, cut, insert in edits:
                text = _apply(text, where, cut, insert)
                idx.update_file(path, text)
            idx.compact()  # the idle step: file-list rows the edits marked are rewritten
        (fresh / path).write_text(text)
        with Index(fresh) as full:
            full.update()
        assert _state(repo / ".kiln" / "index.db") == _state(fresh / ".kiln" / "index.db")


def _long_class(statements: str) -> str:
    """A class whose skeleton is cut into parts (over 150 skeleton lines) right inside the
    many-line signature of ``target``: its second part starts on the ``self,`` line."""
    methods = "".join(
        f"    def m_{n}(self, value):\n        return value + {n}\n" for n in range(148)
    )
    target = (
        "    def target(\n        self,\n        value,\n    ):\n"
        f"        first = value * 2\n{statements}        return first\n"
    )
    tail = "".join(f"    def after_{n}(self):\n        return {n}\n" for n in range(20))
    return f"class Long:\n{methods}{target}{tail}"


def test_an_edit_in_a_method_whose_signature_holds_a_class_part_boundary_is_spliced(
    tmp_path: Path, open_index: Callable[..., Index]
) -> None:
    text = _long_class("        second = first + 1\n")
    parts = [b for b in chunk_file("long.py", text.encode()) if b.kind == "class"]
    target = next(b for b in chunk_file("long.py", text.encode()) if b.name == "Long.target")
    assert any(target.start_line < p.start_line <= target.start_line + 3 for p in parts)
    trees = TreeCache()
    chunk_edit(trees, "long.py", text.encode())
    for typed in ("        typed_name = 1\n", "        more = 2\n        lines = 3\n"):
        text = text.replace("        second = first + 1\n", "        second = first + 1\n" + typed)
        blocks, splice = chunk_edit(trees, "long.py", text.encode())
        assert splice is not None and {b.name for b in splice.blocks} == {"Long.target"}
        assert shape(blocks) == shape(chunk_file("long.py", text.encode()))

    repo, fresh = tmp_path / "repo", tmp_path / "fresh"
    repo.mkdir()
    fresh.mkdir()
    text = _long_class("")
    (repo / "long.py").write_text(text)
    idx = open_index(repo)
    idx.update()
    idx.update_file("long.py", text)
    for n in range(3):
        text = text.replace(
            "        return first\n", f"        first += {n}\n        return first\n"
        )
        idx.update_file("long.py", text)
    (fresh / "long.py").write_text(text)
    full = open_index(fresh)
    full.update()
    assert [r[1:] for r in _rows(idx.db_path)] == [r[1:] for r in _rows(full.db_path)]
