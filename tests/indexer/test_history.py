"""The history signal: earlier commits whose messages match a query vouch for the files they
changed. Real git repositories in temp folders; nothing about git is faked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer import weights as W
from tests import repos

from .conftest import write

# Two modules the query matches equally well by their code: only history can tell them apart.
TWIN = "def compute_total(items):\n    return sum(item.price for item in items)\n"


def git(root: Path, *args: str) -> str:
    return repos.git(root, *args).strip()


def init(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "test@kiln.invalid")
    git(root, "config", "user.name", "Kiln tests")


def commit(root: Path, message: str, files: dict[str, str]) -> str:
    for rel, text in files.items():
        write(root, rel, text)
    git(root, "add", "-A", "--", *files)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def history_repo(repo: Path) -> Path:
    init(repo)
    commit(repo, "Add billing and shipping totals", {"billing.py": TWIN, "shipping.py": TWIN})
    commit(
        repo,
        "Fix rounding of parcel weight surcharges\n\nHeavy parcels were billed one cent short.",
        {"shipping.py": TWIN + "\n# surcharge rounding\n"},
    )
    return repo


def paths(idx: Index, query: str) -> list[str]:
    return [h.path for h in idx.search(query, 5)]


def test_files_changed_by_similar_earlier_fixes_rank_first(
    history_repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the fix's comment ("surcharge rounding") is a second block of shipping.py that says a
    # query word: with ``file_evidence`` on, the code alone would no longer tie
    monkeypatch.setattr(W, "FILE_NEXT_BLOCKS_WEIGHT", 0.0)
    idx = open_index(history_repo)
    stats = idx.update()
    assert stats.commits == 2
    status = idx.status()
    assert status["commits"] == 2
    assert status["history_head"] == git(history_repo, "rev-parse", "HEAD")
    query = "compute total wrong for parcel surcharge"
    assert paths(idx, query)[0] == "shipping.py"
    monkeypatch.setattr(W, "HISTORY_WEIGHT", 0.0)
    monkeypatch.setattr(W, "RECENCY_WEIGHT", 0.0)  # the code alone ties: lower block id first
    assert paths(idx, query)[0] == "billing.py"


def test_recently_active_files_win_ties_no_commit_message_decides(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    init(repo)
    commit(repo, "Start", {"billing.py": TWIN, "shipping.py": TWIN, "tests/test_x.py": TWIN})
    for n in range(3):
        commit(repo, f"Rework step {n}", {"shipping.py": TWIN + "#" * (n + 1)})
        commit(repo, f"Tidy step {n}", {"tests/test_x.py": TWIN + "#" * (n + 1)})
    idx = open_index(repo)
    idx.update()
    query = "total price of the items"
    assert paths(idx, query)[:2] == ["shipping.py", "billing.py"]  # tests get no boost
    monkeypatch.setattr(W, "RECENCY_WEIGHT", 0.0)
    assert paths(idx, query)[0] == "billing.py"


def test_history_follows_head_incrementally_and_across_checkouts(
    history_repo: Path, open_index: Callable[..., Index]
) -> None:
    idx = open_index(history_repo)
    idx.update()
    first = git(history_repo, "rev-list", "--max-parents=0", "HEAD")
    commit(history_repo, "Handle empty invoices in billing", {"billing.py": TWIN + "\n# empty\n"})
    assert idx.update().commits == 1  # only the new commit is read
    assert idx.update().commits == 0
    assert paths(idx, "compute total for empty invoices")[0] == "billing.py"

    git(history_repo, "checkout", "-q", "--detach", first)  # back in time: rebuilt from there
    assert idx.update().commits == 1
    messages = [r[0] for r in idx._conn.execute("SELECT message FROM commits")]
    assert messages == ["Add billing and shipping totals"]


def test_tests_and_docs_get_no_history_boost(
    history_repo: Path, open_index: Callable[..., Index]
) -> None:
    commit(
        history_repo,
        "Fix parcel surcharge rounding again",
        {
            "tests/test_shipping.py": "def test_compute_total():\n    assert compute_total([]) == 0\n"
        },
    )
    idx = open_index(history_repo)
    idx.update()
    ranked = paths(idx, "compute total parcel surcharge rounding")
    assert ranked.index("shipping.py") < ranked.index("tests/test_shipping.py")


def test_a_folder_outside_git_has_no_history_and_still_searches(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "billing.py", TWIN)
    idx = open_index(repo)
    stats = idx.update()
    assert stats.commits == 0
    assert idx.status()["commits"] == 0 and idx.status()["history_head"] is None
    assert paths(idx, "compute total") == ["billing.py"]


def test_a_workspace_inside_a_repository_sees_only_its_own_commits(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    init(repo)
    commit(repo, "Add the app", {"app/billing.py": TWIN, "app/shipping.py": TWIN})
    commit(repo, "Fix parcel surcharge in the app", {"app/shipping.py": TWIN + "\n# fixed\n"})
    commit(repo, "Fix parcel surcharge in the docs", {"docs/notes.md": "parcel surcharge\n"})
    idx = open_index(repo / "app")
    assert idx.update().commits == 2  # the docs-only commit touched nothing in app/
    files = {r[0] for r in idx._conn.execute("SELECT path FROM commit_files")}
    assert files == {"billing.py", "shipping.py"}  # relative to the workspace
    assert paths(idx, "compute total parcel surcharge")[0] == "shipping.py"


def test_the_watcher_catches_up_with_a_new_commit(
    history_repo: Path, open_index: Callable[..., Index]
) -> None:
    import threading

    from indexer import IndexStats, watch

    idx = open_index(history_repo)
    idx.update()
    seen: list[int] = []
    arrived = threading.Event()

    def on_batch(paths: list[str], stats: IndexStats) -> None:
        seen.append(stats.commits)
        if stats.commits:
            arrived.set()

    with watch(history_repo, on_batch, index=idx, debounce=0.1) as watcher:
        commit(history_repo, "Handle empty invoices in billing", {"billing.py": TWIN + "\n#\n"})
        assert arrived.wait(60), (seen, watcher.errors)
    assert sum(seen) == 1
    assert paths(idx, "compute total for empty invoices")[0] == "billing.py"


def test_non_ascii_paths_match_their_indexed_files(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    init(repo)
    commit(repo, "Add both", {"alpha.py": TWIN, "zoë.py": TWIN})  # ties go to alpha.py
    commit(repo, "Fix parcel surcharge rounding", {"zoë.py": TWIN + "\n# fixed\n"})
    idx = open_index(repo)
    idx.update()
    assert paths(idx, "compute total parcel surcharge")[0] == "zoë.py"


def test_without_git_on_the_path_the_index_still_works(
    history_repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(history_repo / "no-such-bin"))
    idx = open_index(history_repo)
    stats = idx.update()
    assert stats.commits == 0 and stats.files_indexed == 2
    assert set(paths(idx, "compute total")) == {"billing.py", "shipping.py"}


def test_a_git_failure_keeps_the_recorded_history(
    history_repo: Path, open_index: Callable[..., Index]
) -> None:
    idx = open_index(history_repo)
    idx.update()
    before = idx.status()
    commit(history_repo, "Handle empty invoices in billing", {"billing.py": TWIN + "\n#\n"})
    tree = git(history_repo, "rev-parse", "HEAD^{tree}")
    (history_repo / ".git" / "objects" / tree[:2] / tree[2:]).unlink()  # git log cannot list it
    assert idx.update().commits == 0
    after = idx.status()
    assert (after["commits"], after["history_head"]) == (before["commits"], before["history_head"])
    assert paths(idx, "compute total parcel surcharge")[0] == "shipping.py"  # history still used


def test_a_query_that_names_a_definition_is_not_outvoted_by_history(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    init(repo)
    client = (
        "class Client:\n    def send_request(self, request):\n"
        "        return self.transport.handle(request)\n"
    )
    pool = (
        "def send_all(pool, requests):\n    # send each request through the pool\n"
        "    for request in requests:\n        pool.send(request)\n"
    )
    commit(repo, "Add the client and the pool", {"client.py": client, "pool.py": pool})
    for n in range(3):
        commit(
            repo, f"Fix how the pool sends a request, take {n}", {"pool.py": pool + "#" * (n + 1)}
        )
    idx = open_index(repo)
    idx.update()
    assert paths(idx, "send request")[0] == "client.py"  # the name of Client.send_request
    assert paths(idx, "pool sends request")[0] == "pool.py"


def test_words_most_commits_contain_are_left_out_of_the_commit_search(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    from indexer import history_votes

    init(repo)
    commit(repo, "Add both", {"billing.py": TWIN, "shipping.py": TWIN})
    for n in range(4):
        commit(repo, f"Fix billing rounding {n}", {"billing.py": TWIN + "#" * (n + 1)})
    commit(repo, "Fix parcel surcharge", {"shipping.py": TWIN + "\n# surcharge\n"})
    idx = open_index(repo)
    idx.update()
    monkeypatch.setattr(W, "HISTORY_MATCH_BUDGET", 2)  # "fix" is in five commits: too common
    assert history_votes._selective(idx._conn, ["fix", "surcharge"]) == ["surcharge"]
    assert paths(idx, "fix the total surcharge")[0] == "shipping.py"
    monkeypatch.setattr(W, "HISTORY_MATCH_BUDGET", 100)
    assert history_votes._selective(idx._conn, ["fix", "surcharge"]) == ["surcharge", "fix"]
