"""A camelCase identifier says its words as much as a plain word does: the text column holds
``retryTimeout`` as one token, so in Java, JavaScript or Go the identifiers' column is where
the code says them (``weights.COLUMN_WEIGHTS["idents"]``, bench/README.md "Recall, fourth
pass")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer import weights as W

from .conftest import write


def _tree(repo: Path, open_index: Callable[..., Index]) -> Index:
    # uses.js says both words, only inside identifiers; mentions.js says one of them, plainly
    write(repo, "src/uses.js", "function plan(job) {\n  return job.retryTimeout;\n}\n")
    write(repo, "src/mentions.js", "function note(job) {\n  return job.retry;\n}\n")
    for i in range(3):  # "timeout" is the commoner word of the two
        write(repo, f"src/wait{i}.js", f"function wait{i}(t) {{\n  return t.timeout;\n}}\n")
    for i in range(7):
        write(repo, f"src/other{i}.js", f"function other{i}(x) {{\n  return x.value;\n}}\n")
    idx = open_index(repo)
    idx.update()
    return idx


def _order(idx: Index) -> list[str]:
    return [h.path for h in idx.search("retry timeout", 10) if "wait" not in h.path]


def test_the_code_that_uses_both_words_comes_first(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    idx = _tree(repo, open_index)
    assert _order(idx)[:2] == ["src/uses.js", "src/mentions.js"]


def test_at_half_weight_the_plain_word_won(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the weight before: a camelCase part counted half a plain word
    monkeypatch.setitem(W.COLUMN_WEIGHTS, "idents", 0.5)
    idx = _tree(repo, open_index)
    assert _order(idx)[:2] == ["src/mentions.js", "src/uses.js"]
