"""The budgeted view of a search: grouped by file, outlines before bodies, within the budget."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from indexer import Index
from indexer.view import CHARS_PER_TOKEN, render

from .conftest import write


def _project(repo: Path) -> None:
    for i in range(30):
        write(
            repo,
            f"pkg/mod_{i:02}.py",
            f'''
            class Ledger{i}:
                """Ledger number {i}."""

                def post_entry(self, amount):
                    checked = self.validate(amount)
                    self.entries.append(checked)
                    return checked

                def refund_entry(self, entry):
                    # refund the entry and post the reversal
                    reversal = -entry
                    return self.post_entry(reversal)
            ''',
        )


def test_hits_are_grouped_by_file_and_every_path_is_printed_once(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _project(repo)
    idx = open_index(repo)
    idx.update()
    hits = idx.search("refund entry post reversal", 50)
    text = render(hits, "refund entry post reversal", 8000)
    headings = [line for line in text.split("\n") if line and not line[0].isspace()]
    assert len(headings) == len(set(headings))  # a path once, however many hits it has
    order = list(dict.fromkeys(h.path for h in hits))
    assert headings == order[: len(headings)]  # files in the order of their best hit
    assert "refund_entry" in text and "reversal = -entry" in text  # a line with the words


def test_the_budget_holds_and_outlines_come_before_bodies(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _project(repo)
    idx = open_index(repo)
    idx.update()
    hits = idx.search("refund entry", 50)
    small = render(hits, "refund entry", 400)
    assert len(small) <= 400 * CHARS_PER_TOKEN
    files_small = [line for line in small.split("\n") if line.startswith("pkg/")]
    bodies_small = [line for line in small.split("\n") if line.startswith("    ")]
    assert len(files_small) >= 5  # many files outlined ...
    large = render(hits, "refund entry", 4000)
    bodies_large = [line for line in large.split("\n") if line.startswith("    ")]
    assert len(bodies_large) > len(bodies_small)  # ... and a bigger budget buys body lines
    assert len(large) <= 4000 * CHARS_PER_TOKEN


def test_no_hits_render_nothing() -> None:
    assert render([], "anything", 2000) == ""
