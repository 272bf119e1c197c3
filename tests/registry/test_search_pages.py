"""Paging through search results while skills are being published, over real HTTP.

Before: a search cursor was a bare offset into the ranking, so a skill published between two
page requests that ranked above the cursor pushed every later result down one place: the next
page repeated the last result of the previous one (and with several publishes, several).
"""

from __future__ import annotations

from pathlib import Path

import httpx

from skills_registry.archive import build_archive, read_dir
from tests.registry.conftest import LiveRegistry, make_skill

HTTP = httpx.Client(timeout=60)


def _publish(reg: LiveRegistry, token: str, folder: Path, version: str = "1.0.0") -> None:
    response = HTTP.put(
        f"{reg.url}/v1/skills/acme/{folder.name}/versions/{version}",
        content=build_archive(read_dir(folder)),
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 201, response.text


def _page(reg: LiveRegistry, cursor: str | None, limit: int) -> tuple[list[str], str | None]:
    params = {"q": "ledger", "limit": limit, **({"cursor": cursor} if cursor else {})}
    body = HTTP.get(f"{reg.url}/v1/skills", params=params).json()
    return [s["id"] for s in body["skills"]], body["metadata"]["nextCursor"]


def test_pages_have_no_repeats_or_gaps_while_skills_are_published(
    backend_registry: LiveRegistry, tmp_path: Path
) -> None:
    reg, token = backend_registry, backend_registry.token("acme")
    filler = ["quarterly", "monthly", "weekly", "nightly", "yearly"]
    for i in range(12):  # descriptions of different lengths, so scores differ
        words = " ".join(filler[: 1 + i % 5])
        _publish(
            reg, token, make_skill(tmp_path / "old", f"book-{i:02d}", f"Keep a {words} ledger.")
        )
    before, _ = _page(reg, None, 100)
    assert len(before) == 12

    seen, cursor, fresh = [], None, 0
    while True:
        ids, cursor = _page(reg, cursor, 4)
        seen += ids
        if cursor is None:
            break
        for _ in range(2):  # rank first: the query word is in the name
            fresh += 1
            _publish(reg, token, make_skill(tmp_path / "new", f"ledger-{fresh}", "Ledger ledger."))
    assert len(seen) == len(set(seen)), f"repeated across pages: {seen}"
    assert set(before) <= set(seen), f"missing: {set(before) - set(seen)}"


def test_version_pages_have_no_repeats_while_versions_are_published(
    backend_registry: LiveRegistry, tmp_path: Path
) -> None:
    """Before: the versions list's cursor was an offset into the newest-first list, so each new
    version moved every older one down a place and the next page repeated one."""
    reg, token = backend_registry, backend_registry.token("acme")
    folder = make_skill(tmp_path, "notes")
    for minor in range(6):
        _publish(reg, token, folder, f"1.{minor}.0")
    url = f"{reg.url}/v1/skills/acme/notes/versions"
    seen: list[str] = []
    params: dict[str, object] = {"limit": 2}
    minor = 6
    while True:
        body = HTTP.get(url, params=params).json()
        seen += [v["version"] for v in body["versions"]]
        cursor = body["metadata"]["nextCursor"]
        if cursor is None:
            break
        params = {"limit": 2, "cursor": cursor}
        _publish(reg, token, folder, f"1.{minor}.0")
        minor += 1
    assert seen == [f"1.{m}.0" for m in range(5, -1, -1)]
    forged = HTTP.get(url, params={"cursor": "not-a-version"})
    assert forged.status_code == 400 and forged.json()["error"]["message"] == "invalid cursor"
