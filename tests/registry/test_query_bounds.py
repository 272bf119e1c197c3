"""Integer query parameters out of any database's range, against a real registry on 127.0.0.1.

Before: `?since=` past 2**63 reached SQLite as an integer it cannot bind, and the change feed
and the audit log answered a plain-text 500 instead of a JSON error; a negative `cursor` on the
versions list read from the end of the list.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from skills_registry.registry.storage import encode_cursor
from tests.registry.conftest import LiveRegistry, make_skill, publish_skill

HUGE = str(2**64)


@pytest.mark.parametrize(
    "path",
    [
        f"/v1/changes?since={HUGE}",
        f"/v1/changes?limit={HUGE}",
        f"/v1/changes?since=-{HUGE}",
        f"/v1/skills?limit={HUGE}",
        f"/v1/skills/acme/notes/versions?cursor={HUGE}",
        "/v1/skills/acme/notes/versions?cursor=-1",
        f"/v1/audit?since={HUGE}",
        f"/v1/audit?limit=-{HUGE}",
    ],
)
def test_out_of_range_integers_are_a_json_400(
    registry: LiveRegistry, tmp_path: Path, path: str
) -> None:
    publish_skill(registry, make_skill(tmp_path, "notes"), "1.0.0")
    headers = {"Authorization": f"Bearer {registry.token('acme')}"}
    response = httpx.get(registry.url + path, headers=headers)
    assert response.status_code == 400, response.text
    assert "query parameter" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/skills?limit=1_0",
        "/v1/skills?limit=%D9%A3",
        "/v1/skills?limit=%2B5",
        "/v1/skills?limit=%205",
        "/v1/changes?limit=5%0A",
        "/v1/changes?since=1_0",
    ],
)
def test_what_is_no_ascii_integer_is_a_400(registry: LiveRegistry, path: str) -> None:
    """docs/registry.md: a `limit` "that is no integer ... is a 400". Python's int() read `1_0`
    as 10, `\u0663` (an Arabic-Indic three) as 3, and took signs and spaces: all were served."""
    response = httpx.get(registry.url + path)
    assert response.status_code == 400, response.text
    assert "must be an integer" in response.json()["error"]["message"]


def test_in_range_pages_still_work(registry: LiveRegistry, tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "notes")
    for version in ("1.0.0", "1.1.0", "1.2.0"):
        publish_skill(registry, folder, version)
    url = f"{registry.url}/v1/skills/acme/notes/versions"
    first = httpx.get(url, params={"limit": 2}).json()
    assert [v["version"] for v in first["versions"]] == ["1.2.0", "1.1.0"]
    rest = httpx.get(url, params={"cursor": first["metadata"]["nextCursor"]}).json()
    assert [v["version"] for v in rest["versions"]] == ["1.0.0"]
    feed = httpx.get(f"{registry.url}/v1/changes", params={"since": 2**62, "limit": 0})
    assert feed.status_code == 200 and feed.json()["changes"] == []


@pytest.mark.parametrize(
    "state",
    [{"offset": 2**100}, {"offset": "x"}, {"offset": None}, {"offset": [1]}, {"offset": -1},
     {"after": {"a": 1}}, {"after": "a\x00"}, {"other": 1}],
)  # fmt: skip
def test_a_forged_cursor_is_a_json_400(
    backend_registry: LiveRegistry, tmp_path: Path, state: dict[str, object]
) -> None:
    """Before: `{"offset": 2**100}`, `"x"`, `null` or `[1]` in a search cursor was a 500."""
    publish_skill(backend_registry, make_skill(tmp_path, "notes"), "1.0.0")
    for params in ({"q": "notes"}, {}):
        response = httpx.get(
            f"{backend_registry.url}/v1/skills", params={**params, "cursor": encode_cursor(state)}
        )
        assert response.status_code == 400, (params, response.text)
        assert response.json()["error"]["message"] == "invalid cursor"


def test_a_limit_out_of_its_range_is_the_nearest_bound(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    """docs/registry.md: a `limit` outside its range is clamped, not refused."""
    folder = make_skill(tmp_path, "notes")
    for version in ("1.0.0", "1.1.0"):
        publish_skill(registry, folder, version)
    publish_skill(registry, make_skill(tmp_path, "other"), "1.0.0")
    headers = {"Authorization": f"Bearer {registry.token('acme')}"}

    def get(path: str, limit: int) -> dict:
        response = httpx.get(registry.url + path, params={"limit": limit}, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    assert len(get("/v1/skills/acme/notes/versions", 0)["versions"]) == 1
    assert len(get("/v1/skills/acme/notes/versions", 5000)["versions"]) == 2
    assert len(get("/v1/skills", -3)["skills"]) == 1
    assert len(get("/v1/skills", 5000)["skills"]) == 2
    assert len(get("/v1/changes", 0)["changes"]) == 1
    assert len(get("/v1/audit", 0)["audit"]) == 1
    assert len(get("/v1/audit", 10**6)["audit"]) >= 3  # three publishes at least
