"""One signed message never passes for another, over a real registry's answers.

The document and metadata messages carry their own prefixes; a release message
(`id@version:sha256`) carries none, and is kept apart because an id holds no newline. Each
signature the registry serves verifies as its own kind only.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from skills_registry.registry.signing import (
    document_message,
    metadata_message,
    release_message,
    verify_bytes,
)
from tests.registry.conftest import LiveRegistry, make_skill, publish_skill


def test_each_signature_verifies_as_its_own_kind_only(live: LiveRegistry, tmp_path: Path) -> None:
    publish_skill(live, make_skill(tmp_path, "notes"), "1.0.0")
    key = httpx.get(f"{live.url}/.well-known/kiln-registry.json").json()["keys"][0]["publicKey"]
    doc = httpx.get(f"{live.url}/v1/skills/acme/notes/versions/1.0.0").json()
    meta = httpx.get(f"{live.url}/v1/skills/acme/notes/metadata").json()
    [sigs] = doc["signatures"]
    messages = {
        "release": release_message("acme/notes", "1.0.0", doc["archiveSha256"]),
        "document": document_message(doc),
        "metadata": metadata_message(meta["signed"]),
    }
    signatures = {
        "release": sigs["signature"],
        "document": sigs["document"],
        "metadata": meta["signatures"][0]["signature"],
    }
    for kind, signature in signatures.items():
        for other, message in messages.items():
            assert verify_bytes(key, message, signature) == (kind == other), (kind, other)
    prefixes = [m.split(b"\n", 1)[0] + b"\n" for k, m in messages.items() if k != "release"]
    assert len(set(prefixes)) == 2
    assert not any(messages["release"].startswith(p) for p in prefixes)
    assert b"\n" not in messages["release"]
