"""NUL characters in what a client sends, against each backend pair (SQLite, PostgreSQL).

PostgreSQL text and jsonb cannot hold NUL, so before, `?q=a%00b`, `%00` in a skill name,
version, git path or token id, `"\\u0000"` in a status reason, a deprecation message or a
dist-tag version, and a SKILL.md frontmatter or `tools/*.json` string with NUL each reached the
database and came back as a plain-text 500. They are now a JSON 400 (a 422 at publish) on both
backends, before any store sees them.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from skills_registry.archive import ArchiveContents, build_archive
from tests.registry.conftest import LiveRegistry, blob_names, make_skill, publish_skill

READS = [
    ("/v1/skills", {"q": "a\x00b"}),
    ("/v1/skills", {"namespace": "a\x00"}),
    ("/v1/skills/acme/de%00ploy", {}),
    ("/v1/skills/ac%00me/deploy/metadata", {}),
    ("/v1/skills/acme/deploy/versions/1.0.0%00", {}),
    ("/git/acme/deploy%00.git/info/refs", {}),
]
WRITES = [
    ("PUT", "/v1/skills/acme/deploy/dist-tags/beta", {"version": "1.0.0\x00"}),
    ("PUT", "/v1/skills/acme/deploy/versions/1.0.0/status", {"status": "yanked", "reason": "\x00"}),
    ("PUT", "/v1/skills/acme/deploy/deprecation", {"message": "a\x00b"}),
    ("DELETE", "/v1/tokens/tok_%00", None),
]


def test_nul_in_a_path_query_or_body_is_a_json_400(
    backend_registry: LiveRegistry, tmp_path: Path
) -> None:
    reg = backend_registry
    publish_skill(reg, make_skill(tmp_path, "deploy", description="Deploy things."), "1.0.0")
    auth = {"Authorization": f"Bearer {reg.token('acme')}"}
    answers = [httpx.get(reg.url + path, params=params) for path, params in READS]
    answers += [
        httpx.request(m, reg.url + path, json=body, headers=auth) for m, path, body in WRITES
    ]
    statuses = [(r.request.method, r.request.url.path, r.status_code) for r in answers]
    assert all(code == 400 for _, _, code in statuses), statuses
    assert all(r.json()["error"]["code"] == "bad_request" for r in answers)
    detail = httpx.get(f"{reg.url}/v1/skills/acme/deploy").json()  # nothing was changed
    assert detail["deprecated"] is None and detail["distTags"] == {"latest": "1.0.0"}


@pytest.mark.parametrize(
    "files",
    [
        {"SKILL.md": '---\nname: notes\ndescription: "nul \\0 here"\n---\n# Notes\n'},
        {
            "SKILL.md": "---\nname: notes\ndescription: Fine.\n---\n# Notes\n",
            "tools/t.json": '{"name": "t", "description": "a\\u0000b", "input_schema": {}}',
        },
    ],
)
def test_nul_in_frontmatter_or_a_tool_schema_is_a_422(
    backend_registry: LiveRegistry, files: dict[str, str]
) -> None:
    reg = backend_registry
    archive = build_archive(ArchiveContents("notes", {k: v.encode() for k, v in files.items()}))
    response = httpx.put(
        f"{reg.url}/v1/skills/acme/notes/versions/1.0.0",
        content=archive,
        headers={"Authorization": f"Bearer {reg.token('acme')}"},
    )
    assert response.status_code == 422, response.text
    assert "NUL" in response.text
    assert httpx.get(f"{reg.url}/v1/skills/acme/notes").status_code == 404
    assert blob_names(reg) == set()
