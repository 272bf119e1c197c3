"""The dist-tag name rule, on each backend pair over real HTTP, in the client and in migrate.

A dist-tag is 1 to 32 characters: lowercase a-z, digits and inner '-', starting with a letter,
and never a version range. Before, the server took `x`, `v1` and `vx` (which `install ID@v1`
reads as ranges, so the tag named nothing anyone could install) and `next-`; a name past the
rule was a 400 `bad_request`. Now each is a 422 `invalid_dist_tag` naming the rule, the client
refuses it before asking, a tag stored before the rule held can still be removed, and
`kiln registry migrate` leaves such a tag behind with a warning instead of stopping half-way.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

from skills_registry.client import RegistryClient
from skills_registry.registry.errors import InvalidDistTag
from tests.registry.conftest import (
    FIXTURES,
    LiveRegistry,
    cli_env,
    kiln,
    make_skill,
    publish_skill,
    start_registry,
)

RULE = (
    "a dist-tag is 1 to 32 characters: lowercase a-z, digits and inner '-', starting with a "
    "letter, and no version range ('x', 'v1')"
)


def test_a_dist_tag_past_the_rule_is_a_422_naming_it(
    backend_registry: LiveRegistry, tmp_path: Path
) -> None:
    publish_skill(backend_registry, make_skill(tmp_path, "tags"), "1.0.0")
    base = f"{backend_registry.url}/v1/skills/acme/tags"
    auth = {"Authorization": f"Bearer {backend_registry.token('acme')}"}
    with httpx.Client(headers=auth) as c:
        for tag, shown in [("x", "x"), ("v1", "v1"), ("vx", "vx"), ("next-", "next-"),
                           ("BETA", "BETA"), ("be%0Ata", "be\\nta"), ("a" * 33, "a" * 33),
                           ("1.0", "1.0"), ("%E2%80%AEbeta", "\\u202ebeta")]:  # fmt: skip
            refused = c.put(f"{base}/dist-tags/{tag}", json={"version": "1.0.0"})
            assert refused.status_code == 422, (tag, refused.text)
            error = refused.json()["error"]
            assert error["code"] == "invalid_dist_tag", error
            assert error["message"] == f"invalid dist-tag '{shown}': {RULE}", error
            gone = c.delete(f"{base}/dist-tags/{tag}")  # not stored: nothing to remove
            assert gone.status_code == 422 and gone.json()["error"]["code"] == "invalid_dist_tag"
        for tag in ("beta", "stable-2", "a--b", "latest", "n" * 32):
            assert c.put(f"{base}/dist-tags/{tag}", json={"version": "1.0.0"}).is_success, tag
        tags = c.get(base).json()["distTags"]
        audit = c.get(f"{backend_registry.url}/v1/audit").json()["audit"]
    assert sorted(tags) == sorted(["beta", "stable-2", "a--b", "latest", "n" * 32])
    assert [a["action"] for a in audit].count("dist-tag:x") == 0

    client = RegistryClient(backend_registry.url, backend_registry.token("acme"))
    with client, pytest.raises(InvalidDistTag) as refused_here:
        client.set_dist_tag("acme/tags", "v1", "1.0.0")
    assert str(refused_here.value) == f"invalid dist-tag 'v1': {RULE}"
    assert refused_here.value.exit_code == 2 and "\n" not in str(refused_here.value)


def test_a_tag_stored_before_the_rule_is_removable_and_not_migrated(tmp_path: Path) -> None:
    data = tmp_path / "data"
    live = start_registry(data)
    try:
        publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
        db = sqlite3.connect(data / "registry.db")
        with db:  # what a tag request stored before the rule
            for tag in ("v1", "next-"):
                db.execute(
                    "INSERT INTO dist_tags VALUES ('acme/brand-guidelines', ?, '1.0.0')", (tag,)
                )
        db.close()
    finally:
        live.stop()

    dst = tmp_path / "dst"
    migrated = kiln(
        "registry", "migrate", "--from", f"sqlite://{data}/registry.db",
        "--from-blobs", f"file://{data}/blobs", "--to", f"sqlite://{dst}/registry.db",
        "--to-blobs", f"file://{dst}/blobs", "--signing-key", str(data / "keys" / "ed25519.key"),
        env=cli_env(tmp_path / "home"), cwd=tmp_path,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout == "1 skills: 1 versions copied, 0 already present (verified)\n"
    assert migrated.stderr.splitlines()[-1] == (
        "kiln: warning: 2 dist-tag(s) break the dist-tag rule (set before it held): "
        "acme/brand-guidelines@next-, acme/brand-guidelines@v1; not copied"
    ), migrated.stderr
    copied = sqlite3.connect(dst / "registry.db")
    assert copied.execute("SELECT tag FROM dist_tags").fetchall() == [("latest",)]
    copied.close()

    live = start_registry(data)
    try:
        base = f"{live.url}/v1/skills/acme/brand-guidelines/dist-tags"
        auth = {"Authorization": f"Bearer {live.token('acme')}"}
        removed = httpx.delete(f"{base}/v1", headers=auth)
        assert removed.status_code == 200, removed.text
        assert removed.json()["distTags"] == {"latest": "1.0.0", "next-": "1.0.0"}
    finally:
        live.stop()
