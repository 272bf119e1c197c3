"""A query that spells out an identifier held by only a block or two gets those blocks first,
as a grep would, even from a test file whose penalty and common parts would otherwise put
other blocks above them; plain words and common identifiers change nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer import weights as W
from indexer.verbatim import identifier_shaped

from .conftest import write

SOURCE = "".join(
    f'''
def retry_budget_{n}(session, budget):
    """Retry the session while the budget lasts; typed budget {n} for the retry session."""
    budget = session.retry(budget, typed=True)
    return budget
'''
    for n in range(12)
)
TEST = """
def test_retry_budget_is_spent():
    retry_budget_typed_7_5512 = spend(7)
    assert retry_budget_typed_7_5512 == 0
"""


@pytest.fixture
def indexed(repo: Path, open_index: Callable[..., Index]) -> Index:
    write(repo, "lib/retry.py", SOURCE)
    write(repo, "tests/test_retry.py", TEST)
    idx = open_index(repo)
    idx.update()
    return idx


def test_a_rare_identifier_brings_its_block_first(indexed: Index) -> None:
    hits = indexed.search("retry_budget_typed_7_5512", 3)
    assert (hits[0].path, hits[0].name) == ("tests/test_retry.py", "test_retry_budget_is_spent")


def test_without_the_rule_the_test_block_is_not_first(
    indexed: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case above is one the rule decides: switched off, other blocks come first."""
    monkeypatch.setattr(W, "VERBATIM_WEIGHT", 1.0)
    hits = indexed.search("retry_budget_typed_7_5512", 3)
    assert hits[0].path == "lib/retry.py"


def test_plain_words_are_not_identifiers() -> None:
    assert [w for w in ("request", "retry_budget", "parseHTTP", "http2", "v2", "Budget")
            if identifier_shaped(w)] == ["retry_budget", "parseHTTP", "http2"]  # fmt: skip
