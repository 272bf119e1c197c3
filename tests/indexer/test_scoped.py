"""The folder a query's component names, searched on its own (``indexer/scoped.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer import weights as W

from .conftest import write

QUERY = "fix(css_formatter): format comments before important"


def _workspace(repo: Path) -> None:
    lib = "/// format comments before important, the crate's entry\npub fn format() {}\n"
    fix = "pub fn print_leading(node: &Node) {\n    // comments before an important flag\n}\n"
    write(repo, "crates/biome_css_formatter/src/lib.rs", lib)
    write(repo, "crates/biome_css_formatter/src/comments.rs", fix)
    write(repo, "crates/biome_css_formatter/src/utils.rs", "pub fn unrelated() {}\n")
    write(repo, "crates/biome_js_formatter/src/comments.rs", fix)  # a sibling crate's twin


@pytest.fixture
def one_candidate(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large tree's situation in a small one: the block search has room for one candidate,
    and neither the graph nor the file list brings in more."""
    monkeypatch.setattr(W, "LEXICAL_CANDIDATES", 1)
    monkeypatch.setattr(W, "GRAPH_CANDIDATES", 0)
    monkeypatch.setattr(W, "FILE_LIST_WEIGHT", 0.0)


@pytest.mark.usefixtures("one_candidate")
def test_the_named_folder_brings_in_files_the_block_search_had_no_room_for(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    _workspace(repo)
    idx = open_index(repo)
    idx.update()
    paths = [h.path for h in idx.search(QUERY, 5)]
    # the one block candidate, then below the named crate's folder the file holding the
    # query's words before the one holding only the crate's name
    assert paths[:3] == [
        "crates/biome_css_formatter/src/lib.rs",
        "crates/biome_css_formatter/src/comments.rs",
        "crates/biome_css_formatter/src/utils.rs",
    ]
    assert "crates/biome_js_formatter/src/comments.rs" not in paths  # not below the folder
    monkeypatch.setattr(W, "SCOPE_FILE_CANDIDATES", 0)
    paths = [h.path for h in idx.search(QUERY, 5)]
    assert "crates/biome_css_formatter/src/comments.rs" not in paths


@pytest.mark.usefixtures("one_candidate")
def test_a_one_word_component_searches_no_folder(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _workspace(repo)
    idx = open_index(repo)
    idx.update()
    paths = [h.path for h in idx.search("fix(formatter): format comments before important", 5)]
    assert paths == ["crates/biome_css_formatter/src/lib.rs"]


@pytest.mark.usefixtures("one_candidate")
def test_the_named_folder_is_found_in_the_tree_when_no_candidate_lies_in_it(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # every word of the subject is said best in a sibling crate: the one block candidate
    syntax = "/// property attachment across lines in block mappings\npub fn block_map() {}\n"
    write(repo, "crates/biome_yaml_syntax/src/block_ext.rs", syntax)
    lexer = "pub fn consume_property(line: &str) {\n    // a property ends its line\n}\n"
    write(repo, "crates/biome_yaml_parser/src/lexer.rs", lexer)
    write(repo, "crates/biome_json_parser/src/lexer.rs", lexer)  # another parser's twin
    idx = open_index(repo)
    idx.update()
    query = "fix(parser/yaml): property attachment across lines in block mappings"
    paths = [h.path for h in idx.search(query, 5)]
    # the named crate's file first (the scope's folder prior), the twin in another parser not
    assert paths == [
        "crates/biome_yaml_parser/src/lexer.rs",
        "crates/biome_yaml_syntax/src/block_ext.rs",
    ]
    monkeypatch.setattr(W, "SCOPE_FOLDER_FROM_TREE", False)  # only the candidates' folders
    paths = [h.path for h in idx.search(query, 5)]
    assert paths == ["crates/biome_yaml_syntax/src/block_ext.rs"]
