"""A fault inside the registry (here: its blob folder replaced by a file) answered over HTTP.

Before: an exception no handler knew became starlette's plain-text `Internal Server Error`,
unlike every other answer's `{"error": {...}}`; the publish client then printed a body it could
not parse. Now it is a JSON 500 with one line that names no path; the details (the traceback
with the paths) go to the server's log only, and nothing of the failed publish is stored.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx

from skills_registry.archive import build_archive, read_dir
from tests.registry.conftest import LiveRegistry, make_skill


def test_an_unexpected_fault_is_a_json_500_without_paths(
    live: LiveRegistry, tmp_path: Path
) -> None:
    archive = build_archive(read_dir(make_skill(tmp_path, "notes")))
    headers = {"Authorization": f"Bearer {live.token('acme')}"}
    base = f"{live.url}/v1/skills/acme/notes"
    assert httpx.put(f"{base}/versions/1.0.0", content=archive, headers=headers).status_code == 201
    blobs = live.data / "blobs"
    shutil.rmtree(blobs)
    blobs.write_text("not a folder")

    response = httpx.put(f"{base}/versions/1.1.0", content=archive, headers=headers)
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "internal_error"
    assert "\n" not in error["message"] and str(tmp_path) not in response.text
    assert "Traceback" not in response.text and "NotADirectoryError" not in response.text
    assert [v["version"] for v in httpx.get(base).json()["versions"]] == ["1.0.0"]
