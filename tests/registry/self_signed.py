"""A hostile registry with its own key, for the tests of what only the client's checks stop."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from skills_registry.archive import ArchiveContents, build_archive, tree_hash
from skills_registry.registry.signing import load_or_create_signer
from tests.registry.conftest import cli_env, kiln

SKILL_MD = b"---\nname: helper\ndescription: x\n---\n"


class SelfSigned:
    """A hostile registry with its own key (pinned on first use, as any registry's is): it signs
    whatever it serves, so only the client's own checks stand between it and the disk."""

    def __init__(self, tmp_path: Path, version: str = "1.0.0", skill_md: bytes = SKILL_MD) -> None:
        self.signer = load_or_create_signer(tmp_path / "key")
        files = {"SKILL.md": skill_md}
        self.archive = build_archive(ArchiveContents("helper", files))
        sha = hashlib.sha256(self.archive).hexdigest()
        self.doc: dict[str, Any] = {
            "id": "acme/helper", "name": "helper", "namespace": "acme", "version": version,
            "archiveSha256": sha, "treeHash": tree_hash(files), "files": [], "frontmatter": {},
        }  # fmt: skip
        self.signed: dict[str, Any] = {
            "_type": "kiln-skill-metadata", "id": "acme/helper", "seq": 1,
            "expires": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
            "versions": {version: {"status": "active", "archiveSha256": sha}},
            "distTags": {"latest": version},
        }  # fmt: skip
        self.app = Starlette(routes=[Route("/{p:path}", self.answer)])

    async def answer(self, request: Request) -> Response:
        path, signer = request.url.path, self.signer
        if path.endswith("kiln-registry.json"):
            key = {
                "keyId": signer.key_id,
                "algorithm": "ed25519",
                "publicKey": signer.public_key_b64,
            }
            return JSONResponse({"keys": [key]})
        if path.endswith("/metadata"):
            return JSONResponse(signer.sign_metadata(self.signed))
        if path.endswith("/archive"):
            return Response(self.archive, media_type="application/gzip")
        doc = {k: v for k, v in self.doc.items() if k != "signatures"}
        release = signer.sign(doc["id"], str(doc["version"]), doc["archiveSha256"])
        sig = {"keyId": signer.key_id, "signature": release, "document": signer.sign_document(doc)}
        return JSONResponse({**doc, "signatures": [sig]})


def install(url: str, tmp_path: Path, *extra: str) -> tuple[int, str, Path]:
    """`kiln skills install acme/helper --yes` into a new project: exit code, stderr, project."""
    project = tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    done = kiln(
        "skills", "install", "acme/helper", "--registry", url, "--yes", *extra,
        env=cli_env(tmp_path / "home"), cwd=project,
    )  # fmt: skip
    return done.returncode, done.stderr, project
