"""Each language's fixture through the real grammar, chunker and index: its definitions by
kind and name, a class skeleton with bodies collapsed, captured references, and a search by a
definition's name finding it first (the specs: ``language_specs``)."""

from __future__ import annotations

import shutil

import pytest

from indexer import Index
from indexer.chunker import chunk_file
from indexer.languages import language_for

from .conftest import FIXTURES
from .language_specs import TYPED, Spec
from .language_specs_scripting import SCRIPTING

SPECS = TYPED + SCRIPTING

# how a doc comment begins: //, /**, #, --, (**, a Julia docstring, Erlang's %%, Elixir's @doc
COMMENT_STARTS = ("/", "#", "-", "(*", '"', "%", "@doc")


@pytest.fixture(scope="module")
def spec_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("spec-langs")
    for spec in SPECS:
        shutil.copy(FIXTURES / spec.file, root / spec.file)
    idx = Index(root)
    idx.update()
    yield idx
    idx.close()


def _blocks(spec: Spec):  # type: ignore[no-untyped-def]
    return chunk_file(spec.file, (FIXTURES / spec.file).read_bytes())


def _names(block) -> list[str]:  # type: ignore[no-untyped-def]
    return block.name.split(", ")  # merged tiny siblings list each name


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.language)
def test_definitions(spec: Spec) -> None:
    assert language_for(spec.file) == spec.language
    blocks = _blocks(spec)
    found = {(b.kind, name) for b in blocks for name in _names(b)}
    assert set(spec.defs) <= found, sorted(found)
    named = {name for _, name in found}
    assert not named & set(spec.absent)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.skeleton], ids=lambda s: s.language)
def test_skeleton(spec: Spec) -> None:
    assert spec.skeleton is not None
    name, holds, lacks = spec.skeleton
    block = next(b for b in _blocks(spec) if b.kind == "class" and b.name == name)  # the first
    for line in holds:
        assert line in block.text, block.text
    for text in lacks:
        assert text not in block.text, block.text


@pytest.mark.parametrize("spec", [s for s in SPECS if s.refs], ids=lambda s: s.language)
def test_references(spec: Spec) -> None:
    assert spec.refs is not None
    name, refs = spec.refs
    blocks = [b for b in _blocks(spec) if name in _names(b)]
    assert blocks, name
    assert refs <= set().union(*(b.refs for b in blocks))


@pytest.mark.parametrize("spec", [s for s in SPECS if s.doc], ids=lambda s: s.language)
def test_doc_comment(spec: Spec) -> None:
    assert spec.doc is not None
    name, words = spec.doc
    block = next(b for b in _blocks(spec) if b.name == name)  # the first
    assert words in block.docstring and block.text.lstrip().startswith(COMMENT_STARTS)
    assert "<summary>" not in block.docstring and not block.docstring.startswith('"')


@pytest.mark.parametrize(
    ("spec", "query", "name"),
    [(s, q, n) for s in SPECS for q, n in s.searches],
    ids=lambda v: v if isinstance(v, str) else v.language,
)
def test_search_by_name(spec: Spec, query: str, name: str, spec_index: Index) -> None:
    top = spec_index.search(query, k=1)[0]
    # a constructor carries its class's name (``Foo.Foo``, ``Foo.init``): it answers too
    answers = {name, f"{name}.{name.rsplit('.', 1)[-1]}", f"{name}.init", f"{name}.__construct"}
    assert top.path == spec.file and answers & set(top.name.split(", ")), (top.path, top.name)
