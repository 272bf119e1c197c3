"""What searches keep between calls (``indexer.search_cache``) and the merged FTS segments
(``indexer.compact``) change no result: a search with the index's cache gives the hits and
scores of a search that reads everything afresh, and follows new commits, deleted and renamed
files at once. Real git repositories and real index files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import indexer.index as index_module
from indexer import Index, compact, ranking
from indexer import weights as W
from tests import repos

from .conftest import write

TWIN = "def compute_total(items):\n    return sum(item.price for item in items)\n"
QUERIES = [
    "compute total for empty invoices",
    "fix typo",
    "Fix typo in the shipping docs",
    "parcel surcharge rounding",
    "total price of the items",
    "billing",
]


def hits(idx: Index, query: str, *, fresh: bool = False) -> list[tuple]:
    """(path, lines, name, score) of each hit: through the index's cache, or read afresh."""
    found = ranking.search(idx._reader(), query, 10) if fresh else idx.search(query, 10)
    return [(h.path, h.start_line, h.end_line, h.name, h.score) for h in found]


def same_as_fresh(idx: Index) -> dict[str, list[tuple]]:
    """Every query's hits, checked equal (scores bit for bit) to an uncached search."""
    out = {}
    for query in QUERIES:
        out[query] = hits(idx, query)
        assert out[query] == hits(idx, query, fresh=True), query
    return out


def many_commits(repo: Path) -> Callable[[str, dict[str, str]], None]:
    commit = repos.committing_repo(repo)
    commit("Add billing and shipping totals", {"billing.py": TWIN, "shipping.py": TWIN})
    for n in range(12):  # equal messages: equal BM25 scores, ordered by commit id
        commit("Fix typo", {"shipping.py": TWIN + "#" * (n + 1)})
        commit("Fix typo in docs", {f"docs/page{n}.md": f"page {n}\n"})
    commit("Round parcel surcharges", {"shipping.py": TWIN + "# parcel\n"})
    return commit


def test_a_new_commit_reaches_the_next_search(
    tmp_path: Path, open_index: Callable[..., Index]
) -> None:
    repo = tmp_path / "repo"
    commit = many_commits(repo)
    idx = open_index(repo)
    idx.update()
    before = same_as_fresh(idx)  # fills the per-term memo
    # shipping.py changed in most commits: its share of the "totals" commit counts for less
    assert before["compute total for empty invoices"][0][0] == "billing.py"
    commit("Handle empty invoices in shipping", {"shipping.py": TWIN + "# empty\n"})
    assert idx.sync_history() == 1  # the watcher's path when HEAD moves: no file re-read
    after = same_as_fresh(idx)
    assert after["compute total for empty invoices"][0][0] == "shipping.py"


def test_deleted_and_renamed_files_leave_the_history_votes_at_once(
    tmp_path: Path, open_index: Callable[..., Index]
) -> None:
    repo = tmp_path / "repo"
    many_commits(repo)
    idx = open_index(repo)
    idx.update()
    before = same_as_fresh(idx)
    assert "shipping.py" in {h[0] for h in before["parcel surcharge rounding"]}
    idx.remove_file("shipping.py")  # an editor deleted it: no commit yet
    after = same_as_fresh(idx)
    assert "shipping.py" not in {h[0] for hs in after.values() for h in hs}
    (repo / "shipping.py").rename(repo / "freight.py")
    idx.update()
    renamed = same_as_fresh(idx)
    assert "freight.py" in {h[0] for h in renamed["total price of the items"]}


def test_an_edit_is_found_by_the_next_search_with_the_same_scores(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    for n in range(6):
        write(repo, f"m{n}.py", TWIN.replace("compute_total", f"compute_total_{n}"))
    idx = open_index(repo)
    idx.update()
    same_as_fresh(idx)
    idx.update_file("m3.py", TWIN + "def empty_invoices():\n    return []\n")
    found = same_as_fresh(idx)
    assert found["compute total for empty invoices"][0][:4] == ("m3.py", 3, 4, "empty_invoices")


def test_merging_segments_changes_no_hit_or_score(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    idx = open_index(repo)
    for n in range(12):  # one transaction per file: one FTS segment each
        write(repo, f"m{n}.py", TWIN.replace("items", f"items_{n}") + f"# parcel {n}\n")
        idx.update_file(f"m{n}.py")
    conn = idx._conn
    assert compact.segments(conn, "blocks_fts") > 2
    before = {q: hits(idx, q) for q in QUERIES}
    while idx.compact(small_only=True):
        pass
    assert compact.segments(conn, "blocks_fts") < 12
    while idx.compact():
        pass
    assert compact.segments(conn, "blocks_fts") == 1
    assert {q: hits(idx, q) for q in QUERIES} == before
    assert idx.compact() is False  # nothing left to do


def test_a_large_update_leaves_one_segment(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BULK_FILES", 8)
    idx = open_index(repo)
    for n in range(4):  # edits first: a segment each
        write(repo, f"a{n}.py", TWIN.replace("items", f"items_{n}"))
        idx.update_file(f"a{n}.py")
    assert compact.segments(idx._conn, "blocks_fts") > 1
    for n in range(10):  # then a large change (a checkout): parsed in bulk, then merged
        write(repo, f"m{n}.py", TWIN.replace("items", f"parts_{n}"))
    assert idx.update().files_indexed == 10
    assert compact.segments(idx._conn, "blocks_fts") == 1


def test_reading_many_new_commits_leaves_one_segment(
    tmp_path: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sync_history`` (the watcher's call when HEAD moves) merges after a large read, as an
    update does: each search of the history probes every segment of its table."""
    monkeypatch.setattr(index_module, "BULK_FILES", 8)
    repo = tmp_path / "repo"
    commit = many_commits(repo)
    idx = open_index(repo)
    idx.update()
    assert compact.segments(idx._conn, "commits_fts") == 1
    for n in range(9):
        commit(f"Tune parcel surcharge {n}", {"shipping.py": TWIN + f"# {n}\n"})
    before = {q: hits(idx, q, fresh=True) for q in QUERIES}
    assert idx.sync_history() == 9
    assert compact.segments(idx._conn, "commits_fts") == 1
    assert {q: hits(idx, q) for q in QUERIES} != before  # the new commits count ...
    assert same_as_fresh(idx)  # ... and the merge changed no score


SHOP = (
    "def send_receipt(order):\n    mail = order.mail\n    body = order.summary()\n"
    "    return mail.send(body)\n\n\n"
    "def checkout(order):\n    total = order.total\n    order.close()\n    return total\n\n\n"
    "def refund(order):\n    order.reopen()\n    return send_receipt(order)\n"
)


def test_symbol_lookups_follow_edits_and_other_writers(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    """Searches on the writer's connection keep who defines and references each name
    (``search_cache.Symbols``): an edit inside a body that adds a reference, and a commit by
    another connection, reach the next search; hits and scores stay those of a fresh search."""
    write(repo, "shop.py", SHOP)
    for n in range(3):
        write(
            repo,
            f"mail{n}.py",
            f"def notify_{n}(order):\n    x = {n}\n    return send_receipt(order)\n",
        )
    idx = open_index(repo)
    idx.update()
    queries = ["send receipt", "checkout order", "send_receipt"]

    def graph_of_checkout() -> set[str]:
        for query in queries:
            assert hits(idx, query) == hits(idx, query, fresh=True), query
        return {h[3] for h in hits(idx, "send receipt")}

    assert "checkout" not in graph_of_checkout()
    edited = SHOP.replace("    order.close()\n", "    order.close()\n    send_receipt(order)\n")
    idx.update_file("shop.py", edited)  # a splice of checkout: it now references send_receipt
    assert "checkout" in graph_of_checkout()
    other = Index(repo)  # another process's connection writes the file back
    try:
        other.update_file("shop.py", SHOP)
    finally:
        other.close()
    assert "checkout" not in graph_of_checkout()


def test_a_rewritten_history_reaches_the_next_search(
    tmp_path: Path, open_index: Callable[..., Index]
) -> None:
    """A history read anew (another branch checked out) numbers its commits anew: what the
    writer's searches kept per commit id goes with it."""
    repo = tmp_path / "repo"
    commit = many_commits(repo)
    idx = open_index(repo)
    idx.update()
    same_as_fresh(idx)  # keeps which files each similar commit touched
    subprocess.run(["git", "checkout", "-q", "--orphan", "other"], cwd=repo, check=True)
    subprocess.run(["git", "rm", "-rq", "--cached", "."], cwd=repo, check=True)
    (repo / "shipping.py").unlink()  # the new commits do not touch it (the index still has it)
    commit("Fix typo in billing totals", {"billing.py": TWIN + "# billing\n"})
    commit("Round parcel surcharges for billing", {"billing.py": TWIN + "# parcel\n"})
    assert idx.sync_history() == 2  # not a descendant: the recorded history is rebuilt
    same_as_fresh(idx)


ZEBRAS = "def zz_{n}():\n    # zebra zebra\n    return {n}\n"


@pytest.mark.parametrize("change", ["deleted", "added"])
def test_term_counts_follow_the_files_the_watcher_writes(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    # The term counts (``SearchCache.df``: which terms a search scores when it cannot score all)
    # were kept until the next full update: after the watcher removed ten files holding
    # "zebra", a search still counted it common and left it out, ranking fourth the one block
    # left holding it that a fresh index ranks first; after it added ten, a search scored
    # "zebra" as rare and listed seven blocks holding it alone that a fresh index leaves out.
    monkeypatch.setattr(W, "MATCH_DOC_BUDGET", 6)  # room for one of the two words
    write(repo, "keep.py", "def stripes():\n    # a zebra alone\n    return 1\n")
    for n in range(3):
        write(repo, f"h/herd{n}.py", f"def graze_{n}():\n    # the herd\n    return {n}\n")
    zebras = [f"z/zebra{n}.py" for n in range(10)]
    if change == "deleted":
        for n, rel in enumerate(zebras):
            write(repo, rel, ZEBRAS.format(n=n))
    for n in range(20):
        write(repo, f"d/filler{n}.py", f"def g{n}(x):\n    return x + {n}\n")
    idx = open_index(repo)
    idx.update()
    assert hits(idx, "zebra herd") == hits(idx, "zebra herd", fresh=True)  # counts kept
    for n, rel in enumerate(zebras):  # as the watcher does, file by file
        if change == "deleted":
            (repo / rel).unlink()
            idx.remove_file(rel)
        else:
            write(repo, rel, ZEBRAS.format(n=n))
            idx.update_file(rel)
    found = hits(idx, "zebra herd")
    assert found == hits(idx, "zebra herd", fresh=True)
    if change == "deleted":
        assert found[0][0] == "keep.py"
    else:
        assert not {h[0] for h in found} & set(zebras)


@pytest.mark.parametrize("change", ["deleted", "added"])
@pytest.mark.parametrize("writer", ["kiln index", "another Index"])
def test_term_counts_follow_another_process_writing_the_index(
    repo: Path,
    open_index: Callable[..., Index],
    monkeypatch: pytest.MonkeyPatch,
    change: str,
    writer: str,
) -> None:
    """The term counts were dropped on this process's writes only: after `kiln index` in a
    terminal (or `kiln index --watch`) wrote the same index file while an editor's session had
    it open, the session's searches ranked with the counts of before, as the test above shows
    for the watcher. Another connection's commit moves ``PRAGMA data_version``; the counts
    follow it."""
    monkeypatch.setattr(W, "MATCH_DOC_BUDGET", 6)  # room for one of the two words
    write(repo, "keep.py", "def stripes():\n    # a zebra alone\n    return 1\n")
    for n in range(3):
        write(repo, f"h/herd{n}.py", f"def graze_{n}():\n    # the herd\n    return {n}\n")
    zebras = [f"z/zebra{n}.py" for n in range(10)]
    if change == "deleted":
        for n, rel in enumerate(zebras):
            write(repo, rel, ZEBRAS.format(n=n))
    for n in range(20):
        write(repo, f"d/filler{n}.py", f"def g{n}(x):\n    return x + {n}\n")
    idx = open_index(repo)
    idx.update()
    assert hits(idx, "zebra herd") == hits(idx, "zebra herd", fresh=True)  # counts kept
    for n, rel in enumerate(zebras):
        if change == "deleted":
            (repo / rel).unlink()
        else:
            write(repo, rel, ZEBRAS.format(n=n))
    if writer == "kiln index":  # in a terminal, while the editor's session has it open
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "index", str(repo), "--json"],
            capture_output=True, text=True, timeout=120,
            env=os.environ,  # this process's KILN_HOME: whose key marks the index (made_here)
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        stats = json.loads(proc.stdout)
        assert stats["files_indexed"] + stats["files_removed"] == len(zebras), stats
    else:
        other = Index(repo)
        try:
            stats = other.update()
        finally:
            other.close()
        assert stats.files_indexed + stats.files_removed == len(zebras)
    found = hits(idx, "zebra herd")
    assert found == hits(idx, "zebra herd", fresh=True)
    if change == "deleted":
        assert found[0][0] == "keep.py"
    else:
        assert not {h[0] for h in found} & set(zebras)
