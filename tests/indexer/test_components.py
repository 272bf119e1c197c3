"""Vue and Svelte single-file components: the definitions of their ``<script>`` blocks, read
with the JavaScript or TypeScript grammar at the original file's lines, the rest as module
parts, the component's name from the file (``indexer/components.py``); real grammars, a real
index in SQLite."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from indexer import Index, language_changes, store
from indexer.chunker import chunk_file
from indexer.languages import language_for
from indexer.pipeline import digest
from indexer.rows import prepare

from .conftest import FIXTURES, write

VUE = (FIXTURES / "UserCard.vue").read_bytes()
SVELTE = (FIXTURES / "Counter.svelte").read_bytes()


def _lines_match_the_file(blocks: list, data: bytes) -> None:
    """Every block's text is the file's own lines at its line numbers (a class skeleton or a
    split part aside: none here)."""
    lines = data.decode().split("\n")
    for b in blocks:
        assert b.text == "\n".join(lines[b.start_line - 1 : b.end_line]), b.name


def _defs(blocks: list) -> dict[str, tuple[str, int, int]]:
    return {b.name: (b.kind, b.start_line, b.end_line) for b in blocks if b.kind != "module"}


def test_script_setup_in_typescript_gives_its_definitions_at_the_file_lines() -> None:
    blocks = chunk_file("src/components/UserCard.vue", VUE)
    assert language_for("UserCard.vue") == "vue"
    assert all(b.language == "vue" for b in blocks)
    assert _defs(blocks) == {
        "avatarUrl": ("function", 13, 15),  # the plain <script lang="ts">
        "User": ("class", 21, 25),  # a TypeScript interface: read with the TS grammar
        "formatHandle": ("function", 30, 34),  # <script setup lang="ts">
        "selectUser": ("function", 36, 39),
    }
    _lines_match_the_file(blocks, VUE)
    by_name = {b.name: b for b in blocks}
    assert by_name["formatHandle"].docstring == "The handle as shown: with its at sign, lower case."
    assert {"trim", "toLowerCase"} <= by_name["formatHandle"].refs
    # the <script> in the template's comment is no code
    assert all("notCode" not in b.defines for b in blocks)


def test_two_svelte_script_blocks_and_the_markup_between() -> None:
    blocks = chunk_file("src/lib/Counter.svelte", SVELTE)
    assert all(b.language == "svelte" for b in blocks)
    assert _defs(blocks) == {
        "clampCount": ("function", 2, 4),  # <script context="module">
        "incrementCounter": ("function", 13, 16),
        "resetCounter": ("function", 18, 21),
    }
    _lines_match_the_file(blocks, SVELTE)
    by_name = {b.name: b for b in blocks}
    assert "clampCount" in by_name["incrementCounter"].refs  # across the two blocks
    markup = [b for b in blocks if b.kind == "module" and "on:click" in b.text]
    assert len(markup) == 1 and markup[0].end_line == 29  # the markup and style: one part


def test_the_component_is_named_by_its_file() -> None:
    for path, data, name in (
        ("src/components/UserCard.vue", VUE, "UserCard"),
        ("src/lib/Counter.svelte", SVELTE, "Counter"),
    ):
        named = [b for b in chunk_file(path, data) if name in b.defines]
        assert len(named) == 1 and named[0].kind == "module" and named[0].start_line == 1
    # a kebab-case file is the component its importers name in PascalCase
    assert chunk_file("src/user-card.vue", VUE)[0].defines == ["UserCard"]
    assert chunk_file("src/1-col.vue", b"<p>x</p>\n")[0].defines == []  # no identifier


def test_a_component_without_a_script_block_is_its_template() -> None:
    data = b'<template>\n  <p class="empty-state">Nothing here yet</p>\n</template>\n'
    blocks = chunk_file("EmptyState.vue", data)
    assert [(b.kind, b.start_line, b.end_line, b.defines) for b in blocks] == [
        ("module", 1, 3, ["EmptyState"])
    ]
    assert chunk_file("Badge.svelte", b"<span>{label}</span>\n")[0].defines == ["Badge"]
    assert chunk_file("Blank.vue", b"") == []
    # a script that is not JavaScript (a JSON payload, CoffeeScript) is no code either
    data = (
        b'<script type="application/json">{"a": 1}</script>\n'
        b'<script lang="coffee">\nsquare = (x) -> x * x\n</script>\n'
    )
    assert [b.kind for b in chunk_file("Data.vue", data)] == ["module"]
    # ... but a data- attribute says nothing of the script
    data = b'<script data-type="text/template">\nfunction realCode() {}\n</script>\n'
    assert _defs(chunk_file("Data.vue", data)) == {"realCode": ("function", 2, 2)}


def test_malformed_components_still_chunk_at_their_lines() -> None:
    cases = [
        b"<script>\nfunction openEnded() {\n  return 1\n}\n",  # never closed
        b"</template>\n<script setup>\nfunction stray() { return 2 }\n</script>\n</div>\n",
        b"<script lang='ts'>\nfunction broken(: {\n</script>\n<template><p>{{ x }</template>\n",
        b"<scr<script>ipt>\x00\xff\xfe\n</script>\n",
        b"<script>",
        b"<script></script><script   lang=ts>const f = () => 1</script>",
    ]
    for data in cases:
        blocks = chunk_file("Broken.vue", data)
        assert blocks and all(b.language == "vue" for b in blocks)
        _lines_match_the_file(blocks, data.decode("utf-8", errors="replace").encode())
    assert _defs(chunk_file("Open.vue", cases[0])) == {"openEnded": ("function", 2, 4)}
    assert "stray" in _defs(chunk_file("Stray.svelte", cases[1]))
    assert _defs(chunk_file("Arrow.vue", cases[5])) == {"f": ("function", 1, 1)}


def test_an_index_finds_components_by_name_and_their_functions(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "src/components/UserCard.vue", VUE.decode())
    write(repo, "src/lib/Counter.svelte", SVELTE.decode())
    write(repo, "src/util.js", "export function sum(a, b) {\n  return a + b\n}\n")
    idx = open_index(repo)
    assert idx.update().files_indexed == 3
    top = idx.search("format handle", k=1)[0]
    assert (top.path, top.kind, top.name, top.start_line) == (
        "src/components/UserCard.vue",
        "function",
        "formatHandle",
        30,
    )
    assert idx.search("UserCard", k=1)[0].path == "src/components/UserCard.vue"
    top = idx.search("reset counter", k=1)[0]
    assert (top.path, top.name, top.start_line) == ("src/lib/Counter.svelte", "resetCounter", 18)
    # an editor's buffer: the same blocks as the file on disk would give
    edited = SVELTE.decode().replace(
        "count = 0\n    dispatch", "count = 0\n    saveCount(count)\n    dispatch"
    )
    idx.update_file(repo / "src/lib/Counter.svelte", edited)
    top = idx.search("reset counter", k=1)[0]
    assert (top.start_line, top.end_line) == (18, 22) and "saveCount" in top.text


def test_an_existing_index_picks_components_up_without_reparsing_the_rest(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "src/components/UserCard.vue", VUE.decode())
    write(repo, "src/util.js", "export function sum(a, b) {\n  return a + b\n}\n")
    write(repo, "README.md", "# Cards\n")
    idx = open_index(repo)
    idx.update()
    idx.close()
    # as a Kiln that knew no components left it: the .vue file as text windows, and the
    # digests of its languages only
    rel = "src/components/UserCard.vue"
    st = (repo / rel).stat()
    conn = sqlite3.connect(idx.db_path, isolation_level=None)
    conn.execute("BEGIN")
    blocks = prepare(rel, chunk_file(rel, VUE, "text"))
    store.write_file(conn, rel, "text", st.st_mtime_ns, st.st_size, digest(VUE), blocks)
    old = {k: v for k, v in language_changes.digests().items() if k not in ("vue", "svelte")}
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = ?", (json.dumps(old), language_changes.META_KEY)
    )
    conn.execute("COMMIT")
    conn.close()
    assert Index(repo).search("format handle", k=1)[0].kind == "text"

    idx = open_index(repo)
    assert idx.update().files_indexed == 1  # the component; not util.js, not README.md
    top = idx.search("format handle", k=1)[0]
    assert (top.path, top.kind, top.name) == (rel, "function", "formatHandle")
    idx.close()
    assert open_index(repo).update().files_indexed == 0
