"""A query's scope read through the history (``indexer/scope_history.py``): the packages
earlier commits with the same scope changed. Real git repositories, a real index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from indexer import weights as W
from indexer.scope_history import package_of

from .test_history import commit, init

# The same function in two crates: the words of the query cannot tell them apart, and the
# scope ("core") is no folder's name.
TWIN = "pub fn evict_files(project: &Project) {\n    project.clear();\n}\n"
QUERY = "fix(core): evict files of a closed project"


@pytest.fixture
def only_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit-message votes and recency off: what moves a file is the scope's packages."""
    monkeypatch.setattr(W, "HISTORY_WEIGHT", 0.0)
    monkeypatch.setattr(W, "RECENCY_WEIGHT", 0.0)


def _workspace(repo: Path, core_fixes: int, other: str = "fix(cli)") -> None:
    init(repo)
    commit(
        repo,
        "feat: two crates",
        {"crates/app_cli/src/files.rs": TWIN, "crates/app_service/src/files.rs": TWIN},
    )
    for n in range(core_fixes):  # earlier fixes scoped "core" went to the service crate
        commit(
            repo,
            f"fix(core): handle workspace state {n}",
            {
                f"crates/app_service/src/state{n}.rs": f"pub fn state{n}() {{}}\n",
                f"crates/app_service/tests/state{n}.rs": "// a test touched too\n",
            },
        )
    for n in range(3):  # as many saying "core" under another scope went to the cli crate
        commit(
            repo,
            f"{other}: core options {n}",
            {f"crates/app_cli/src/opts{n}.rs": f"pub fn opts{n}() {{}}\n"},
        )


def _top(idx: Index) -> str:
    return idx.search(QUERY, 5)[0].path


@pytest.mark.usefixtures("only_the_rule")
def test_the_package_earlier_fixes_of_the_scope_went_to_ranks_first(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    _workspace(repo, core_fixes=3)
    idx = open_index(repo)
    idx.update()
    assert _top(idx) == "crates/app_service/src/files.rs"
    monkeypatch.setattr(W, "SCOPE_HISTORY_WEIGHT", 0.0)  # the twins tie: lower block id first
    assert _top(idx) == "crates/app_cli/src/files.rs"


@pytest.mark.usefixtures("only_the_rule")
def test_too_few_commits_of_the_scope_say_nothing(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _workspace(repo, core_fixes=W.SCOPE_HISTORY_MIN_COMMITS - 1)
    idx = open_index(repo)
    idx.update()
    assert _top(idx) == "crates/app_cli/src/files.rs"


@pytest.mark.usefixtures("only_the_rule")
def test_commits_saying_the_scope_under_another_scope_do_not_count(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    # three "fix(core)" commits to the service crate, three "core" ones to the cli crate
    # written as a scope of their own ("cli/core"): only the same scope counts
    _workspace(repo, core_fixes=3, other="fix(cli/core)")
    idx = open_index(repo)
    idx.update()
    assert _top(idx) == "crates/app_service/src/files.rs"


def test_a_files_package_is_the_folder_before_src() -> None:
    assert package_of("crates/biome_lsp/src/server.rs") == "crates/biome_lsp"
    assert package_of("streams/src/main/java/org/Foo.java") == "streams"
    assert package_of("src/click/core.py") == ""
    assert package_of("lib/adapters/http.js") == "lib/adapters"
    assert package_of("setup.py") == ""
