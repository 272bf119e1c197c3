"""The search answer cache against request keys a sender chooses, on each store (a real SQLite
file, a real PostgreSQL database).

Before: the cache was keyed on the `limit` as sent, so `limit=100` and `limit=1000000` (the same
page once clamped) were two answers, and any number of out-of-range limits were as many
entries; and an entry count alone bounded it, while each entry holds up to 100 skill rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skills_registry.archive import build_archive, read_dir
from skills_registry.registry.answer_cache import MAX_ANSWERS, MAX_ROWS
from skills_registry.registry.publish import build_release
from skills_registry.registry.signing import load_or_create_key_file
from tests.registry.conftest import make_skill

SKILLS = 40


def _seed(store: Any, tmp_path: Path) -> None:
    signer = load_or_create_key_file(tmp_path / "key")
    for i in range(SKILLS):
        name = f"notes-{i:02d}"
        folder = make_skill(tmp_path / "src", name, description=f"Meeting notes helper number {i}")
        store.add_version(
            build_release(f"acme/{name}", "1.0.0", build_archive(read_dir(folder)), signer)
        )


def _ids(answer: tuple[list[dict[str, Any]], str | None]) -> list[str]:
    return [skill["id"] for skill in answer[0]]


def test_limits_clamped_to_one_page_size_share_one_answer(
    metadata_store: Any, tmp_path: Path
) -> None:
    _seed(metadata_store, tmp_path)
    first = metadata_store.search("notes", limit=100)
    assert len(first[0]) == SKILLS
    for limit in (100, 101, 1000, 10**6, 2**40):
        assert metadata_store.search("notes", limit=limit) == first
    one = metadata_store.search("notes", limit=1)
    assert len(one[0]) == 1 and one[1] is not None
    for limit in (0, -1, -(2**40)):
        assert metadata_store.search("notes", limit=limit) == one
    assert len(metadata_store.search_cache) == 2


def test_made_up_queries_never_grow_the_cache_past_its_bound(
    metadata_store: Any, tmp_path: Path
) -> None:
    """Every query matches all the skills (OR of words), so each answer holds 40 rows: 600 of
    them would be 24,000 rows; the cache keeps at most its bound, and a query asked again gets
    the same answer whether it is still cached or not."""
    _seed(metadata_store, tmp_path)
    expected = _ids(metadata_store.search("meeting", limit=100))
    assert len(expected) == SKILLS
    for i in range(600):
        answer = metadata_store.search(f"notes made-up-{i}", limit=100 + i)
        assert len(answer[0]) == SKILLS
        cache = metadata_store.search_cache
        assert len(cache) <= MAX_ANSWERS and cache.rows <= MAX_ROWS, (i, len(cache), cache.rows)
    assert cache.rows > MAX_ROWS - 100  # it did fill up to the bound
    assert _ids(metadata_store.search("meeting", limit=100)) == expected
    assert _ids(metadata_store.search("notes made-up-0", limit=5)) == expected[:5]
