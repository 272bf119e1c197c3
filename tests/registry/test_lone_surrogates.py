"""Lone surrogates (`\\ud800`): text that a JSON or YAML escape can spell but UTF-8 cannot encode.

Before, a SKILL.md description `"\\uD800"` or a `tools/*.json` string `"\\ud800"` passed every
validation and then failed the canonical JSON the registry signs: a plain-text 500 and a
traceback in the server log, for any publisher. On the client, one such escape in a version
document (which a mirror can add without any key) crashed `kiln skills install` with an internal
error instead of the refusal an altered document gets. Both are now refusals: a 422 naming the
text at publish, a 400 for a request body, and one line (exit 5) at install.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import Response

from skills_registry.archive import ArchiveContents, build_archive
from tests.registry.conftest import LiveRegistry, blob_names, start_registry
from tests.registry.self_signed import SelfSigned, install

SKILL = "---\nname: notes\ndescription: {description}\n---\n# Notes\n"


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"SKILL.md": SKILL.format(description='"bad \\uD800 text"')}, "SKILL.md frontmatter"),
        (
            {
                "SKILL.md": SKILL.format(description="Fine."),
                "tools/t.json": '{"name": "t\\ud800", "input_schema": {"type": "object"}}',
            },
            "tools/t.json",
        ),
    ],
)
def test_publishing_a_lone_surrogate_is_a_422(
    registry: LiveRegistry, files: dict[str, str], named: str
) -> None:
    archive = build_archive(ArchiveContents("notes", {k: v.encode() for k, v in files.items()}))
    response = httpx.put(
        f"{registry.url}/v1/skills/acme/notes/versions/1.0.0",
        content=archive,
        headers={"Authorization": f"Bearer {registry.token('acme')}"},
    )
    assert response.status_code == 422, response.text  # before: a plain-text 500
    assert named in response.text and "surrogate" in response.text
    assert httpx.get(f"{registry.url}/v1/skills/acme/notes").status_code == 404
    assert blob_names(registry) == set()


def test_a_request_body_with_a_lone_surrogate_is_a_400(registry: LiveRegistry) -> None:
    response = httpx.post(
        f"{registry.url}/v1/oidc/token",
        content=b'{"token": "\\ud800"}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "bad_request"


class SurrogateRegistry(SelfSigned):
    """Signs as usual, but its version document carries a `\\ud800` escape, as a mirror could
    add to a real registry's document."""

    async def answer(self, request: Request) -> Response:
        response = await super().answer(request)
        if "/versions/" not in request.url.path or request.url.path.endswith("/archive"):
            return response
        doc = json.loads(bytes(response.body))
        doc["description"] = "\ud800"
        return Response(json.dumps(doc).encode(), media_type="application/json")


def test_a_document_with_a_lone_surrogate_is_refused_in_one_line(tmp_path: Path) -> None:
    hostile = SurrogateRegistry(tmp_path)
    live = start_registry(tmp_path / "unused", app=hostile.app)
    try:
        code, stderr, project = install(live.url, tmp_path)
    finally:
        live.stop()
    assert code == 5, stderr  # before: "internal error: UnicodeEncodeError …"
    assert "internal error" not in stderr and stderr.count("\n") == 1, stderr
    assert not (project / ".kiln" / "skills" / "helper").exists()
