"""Unsigned registry answers of the wrong shape, from a hostile registry on 127.0.0.1.

Searches, token lists, the audit log, whoami and publish receipts are not signed, so a hostile
registry (or a proxy) picks their shape. Before, `{"skills": [1]}` or a receipt without `id`
made `kiln skills search`/`publish`/`tokens`/`audit` stop with "internal error: KeyError …
please report it" and a crash file; each is now one line naming the request, exit 5.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill, start_registry

ANSWERS: dict[str, Any] = {}


async def _answer(request: Request) -> JSONResponse:
    return JSONResponse(ANSWERS.get(request.url.path, {}))


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[LiveRegistry]:
    app = Starlette(routes=[Route("/{p:path}", _answer, methods=["GET", "PUT", "POST", "DELETE"])])
    live = start_registry(tmp_path / "unused", app=app)
    try:
        yield live
    finally:
        live.stop()
        ANSWERS.clear()


WHOAMI = {"/v1/whoami": {"namespace": "acme"}}
RECEIPT_PATH = "/v1/skills/acme/notes/versions/1.0.0"
CASES = [
    (["search", "notes"], {"/v1/skills": {"skills": [1]}}, "/v1/skills"),
    (["search", "notes"], {"/v1/skills": {"skills": [{"id": "a/b"}]}}, "/v1/skills"),
    (["search", "notes", "--json"], {"/v1/skills": {"skills": "many"}}, "/v1/skills"),
    (["search", "notes"], {"/v1/skills": {}}, "/v1/skills"),
    (["tokens", "--token", "t"], {"/v1/tokens": {"tokens": [{"id": 1}]}}, "/v1/tokens"),
    (["tokens", "--token", "t"], {"/v1/tokens": {"tokens": 5}}, "/v1/tokens"),
    (["tokens", "--token", "t", "--revoke", "tok_0123456789ab"], {}, "/v1/tokens/tok_0123456789ab"),
    (["audit", "--token", "t"], {"/v1/audit": {"audit": [{}]}}, "/v1/audit"),
    (["login", "--token", "t"], {"/v1/whoami": {"namespace": ["acme"]}}, "/v1/whoami"),
    (["yank", "acme/notes@1.0.0", "--token", "t"], {}, RECEIPT_PATH + "/status"),
    (["publish", "SRC", "--version", "1.0.0", "--token", "t"], WHOAMI, RECEIPT_PATH),
    (
        ["publish", "SRC", "--version", "1.0.0", "--token", "t"],
        {**WHOAMI, RECEIPT_PATH: {"id": "acme/notes", "version": 1}},
        RECEIPT_PATH,
    ),
]


@pytest.mark.parametrize(("args", "answers", "path"), CASES)
def test_a_wrong_shape_is_one_line_naming_the_request(
    hostile: LiveRegistry, tmp_path: Path, args: list[str], answers: dict[str, Any], path: str
) -> None:
    ANSWERS.update(answers)
    source = make_skill(tmp_path / "src", "notes")
    argv = [str(source) if a == "SRC" else a for a in args]
    result = kiln(
        "skills", *argv, "--registry", hostile.url, env=cli_env(tmp_path / "home"), cwd=tmp_path
    )
    assert result.returncode == 5, (result.returncode, result.stdout, result.stderr)
    assert "internal error" not in result.stderr and result.stderr.count("\n") == 1
    assert f"answered {path} with something unexpected" in result.stderr, result.stderr
