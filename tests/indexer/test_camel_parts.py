"""The camelCase column: ``camel_parts`` finds identifiers run by run over the text's bytes,
and must find exactly what one regular expression over the whole text finds (the rule the
column was defined by), for any text: Unicode letters and digits inside words, ``$``, digits
before a name, replacement characters, lone surrogates."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from indexer import tokens
from indexer.chunker import chunk_file
from indexer.rows import prepare

IDENT = re.compile(r"[A-Za-z_$][\w$]*")


def reference(text: str) -> set[str]:
    """The column's words by its definition: each identifier of the text that is not all
    lower case, all upper case or Capitalised, split into its parts."""
    words: set[str] = set()
    for ident in set(IDENT.findall(text)):
        if not (ident.islower() or ident.isupper() or ident[1:].islower()):
            words.update(tokens.split_identifier(ident))
    return words


def words(text: str) -> set[str]:
    return set(tokens.camel_parts(text).split())


ALPHABET = "aAbBzZ_$09 .:-(\n\t\u00e9\u00c9\u00df\u01c5\u4e2d\u00a0\ufffd\u0663\ud800"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40))
def test_same_words_as_one_expression_over_the_text(text: str) -> None:
    assert words(text) == reference(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_unicode_text(text: str) -> None:
    assert words(text) == reference(text)


def test_runs_cut_where_no_identifier_can_go() -> None:
    # "0xFF" holds the identifier "xFF"; "é" is a word character, so "éparseHTTP" is one run
    # whose identifier starts at "p"; "$" joins ("get$Value"); "_1" has no cased letter.
    text = "x = 0xFF + éparseHTTP(get$Value) - _1 + fooBar.bazQux\nALL_CAPS Capital lower"
    assert words(text) == {
        "x",
        "ff",
        "parse",
        "http",
        "get",
        "value",
        "1",
        "foo",
        "bar",
        "baz",
        "qux",
    }
    assert words(text) == reference(text)


def test_a_block_seen_twice_gives_the_same_words() -> None:
    # The second time every run is known to the process-wide cache.
    text = "def loadUserData(userId):\n    return fetchJSON(userId)\n"
    assert words(text) == words(text) == {"load", "user", "data", "id", "fetch", "json"}


def test_rows_carry_the_words() -> None:
    src = b"class HTTPServer:\n    def handleRequest(self, rawData):\n        return 1\n"
    blocks = chunk_file("srv.py", src)
    rows = prepare("srv.py", blocks).rows
    by_name = {row[3]: set(row[13].split()) for row in rows}
    assert by_name["HTTPServer"] == {"http", "server", "handle", "request", "raw", "data"}


def test_the_column_is_the_same_text_whatever_the_hash_seed() -> None:
    """Two builds of one tree store the same column: the words come in the order their
    identifiers first appear, never in a set's order (which follows ``PYTHONHASHSEED``)."""
    import os
    import subprocess
    import sys

    names = " ".join(f"getValue{n} setRowCount{n} parseHTTPResponse{n}" for n in range(40))
    code = f"from indexer.tokens import camel_parts; print(camel_parts({names!r}))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout  # fmt: skip
        for seed in (1, 2, 3, 4)
    }
    assert len(outputs) == 1
    assert outputs.pop().split()[:5] == ["get", "value", "0", "set", "row"]


def test_a_query_drops_the_one_character_parts_of_its_words_not_the_words() -> None:
    """A one-character part of a query word (the ``2`` of ``http2`` or of a generated name)
    is held by thousands of blocks and says nothing of which one is meant: it is not searched
    on its own; the whole word is, and so is a one-character word the query holds alone."""
    terms = tokens.query_terms("kiln_typed_2_8530 http2 python 3")
    assert terms == ["kiln_typed_2_8530", "kiln", "typed", "8530", "http2", "http", "python", "3"]


NAME_ALPHABET = "aAzZ_09\n\u03a3\u03c3\u0130\u00e9\u00c9\u01c5"


@settings(max_examples=300, deadline=None)
@given(st.sets(st.text(alphabet=NAME_ALPHABET, max_size=8), max_size=6))
def test_names_lowered_in_one_go_are_each_name_lowered(names: set[str]) -> None:
    """The symbol rows lower-case a block's names joined by newlines (one call): the same
    names as one by one, "Σ" at a name's end included, and a name holding a newline too."""
    from indexer.rows import lowered

    assert lowered(names) == sorted({n.lower() for n in names})


@settings(max_examples=300, deadline=None)
@given(
    st.sets(
        st.one_of(st.none(), st.binary(max_size=6), st.text(NAME_ALPHABET).map(str.encode)),
        max_size=6,
    )
)
def test_reference_names_decoded_in_one_go_are_each_decoded(raws: set[bytes | None]) -> None:
    """A block's reference names are decoded joined by newlines: invalid UTF-8, a name
    holding a newline and a capture without text decode as they would one by one."""
    from indexer.definitions import ref_name, ref_names

    assert sorted(ref_names(raws)) == sorted(ref_name(raw) for raw in raws)
