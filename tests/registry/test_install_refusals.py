"""Installs from a registry or mirror that lies: a tampered archive, a bad signature, a changed
signing key, a hostile archive it signed. Each is refused and leaves the project as it was."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from skills_registry.client import RegistryClient, TrustStore
from skills_registry.install import Installer, Scope
from skills_registry.registry.errors import ArchiveError, IntegrityError, TrustError
from skills_registry.registry.storage import now_iso
from tests.registry.conftest import (
    FIXTURES,
    LiveRegistry,
    cli_env,
    fails,
    kiln,
    publish_skill,
    tree_snapshot,
)
from tests.registry.hostile import CASES


def test_tampered_archive_is_refused(registry: LiveRegistry, project: Path) -> None:
    doc = publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    blob = registry.data / "blobs" / doc["archiveSha256"][:2] / doc["archiveSha256"]
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xFF
    blob.write_bytes(bytes(data))
    before = tree_snapshot(project)
    with RegistryClient(registry.url) as client, pytest.raises(IntegrityError, match="sha256"):
        Installer(Scope.project(project), yes=True).install(client, "acme/brand-guidelines")
    assert tree_snapshot(project) == before


def test_bad_signature_is_refused(registry: LiveRegistry, project: Path) -> None:
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    db = sqlite3.connect(registry.data / "registry.db")
    doc = json.loads(db.execute("SELECT doc FROM versions").fetchone()[0])
    sig = doc["signatures"][0]["signature"]
    doc["signatures"][0]["signature"] = ("B" if sig[0] != "B" else "C") + sig[1:]
    with db:
        db.execute("UPDATE versions SET doc=?", (json.dumps(doc),))
    db.close()
    before = tree_snapshot(project)
    with RegistryClient(registry.url) as client, pytest.raises(IntegrityError, match="signature"):
        Installer(Scope.project(project), yes=True).install(client, "acme/brand-guidelines")
    assert tree_snapshot(project) == before


def test_changed_registry_key_is_refused(
    registry: LiveRegistry, project: Path, kiln_home: Path
) -> None:
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    trust = TrustStore()
    with RegistryClient(registry.url) as client:
        Installer(Scope.project(project), yes=True).install(client, "acme/brand-guidelines")
        pinned = json.loads((kiln_home / "trusted_keys.json").read_text())
        assert list(pinned) == [registry.url]
        assert (kiln_home / "trusted_keys.json").stat().st_mode & 0o777 == 0o600
        pinned[registry.url]["publicKey"] = "A" * 43 + "="
        (kiln_home / "trusted_keys.json").write_text(json.dumps(pinned))
        before = tree_snapshot(project)
        with pytest.raises(TrustError, match="was pinned"):
            Installer(Scope.project(project), yes=True, trust=trust, force=True).install(
                client, "acme/internal-comms"
            )
    assert tree_snapshot(project) == before


@pytest.mark.parametrize(
    "case", ["zip-slip", "symlink", "hardlink", "absolute", "duplicate", "device"]
)
def test_signed_hostile_archive_cannot_escape(
    registry: LiveRegistry, project: Path, case: str
) -> None:
    """Even a compromised registry that signs a hostile archive cannot write outside the temp dir."""
    archive = CASES[case][0]()
    reg = registry.app.state.registry  # type: ignore[attr-defined]
    sha = reg.blobs.put(archive)
    reg.store.add_version(
        {
            "id": "acme/evil",
            "name": "evil",
            "namespace": "acme",
            "version": "1.0.0",
            "description": "x",
            "archiveSha256": sha,
            "treeHash": "0" * 64,
            "files": [],
            "frontmatter": {},
            "tools": [],
            "scan": {"findings": [], "scripts": [], "verdict": "clean"},
            "publishedAt": now_iso(),
            "signatures": [
                {
                    "keyId": reg.signer.key_id,
                    "algorithm": "ed25519",
                    "signature": reg.signer.sign("acme/evil", "1.0.0", sha),
                }
            ],
        }
    )
    before = tree_snapshot(project.parent)
    with RegistryClient(registry.url) as client, pytest.raises(ArchiveError, match=CASES[case][1]):
        Installer(Scope.project(project), yes=True).install(client, "acme/evil")
    after = tree_snapshot(project.parent)
    ours = lambda snap: {k: v for k, v in snap.items() if not k.startswith("registry-data")}  # noqa: E731
    assert ours(after) == ours(before)
    assert not list(project.parent.rglob("escaped.txt"))


@pytest.mark.parametrize("link", [".kiln/skills", ".kiln", "skills-lock.json", ".kiln/locks"])
def test_a_repository_link_cannot_send_an_install_outside_the_checkout(
    registry: LiveRegistry, tmp_path: Path, link: str
) -> None:
    """A cloned repository ships `.kiln/skills -> ~/.kiln/skills` (or a linked lockfile): before,
    `kiln skills install --frozen --ci` wrote the skill, marker and lockfile through it."""
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    env = cli_env(tmp_path / "home")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    first = kiln(
        "skills", "install", "acme/brand-guidelines", "--yes", "--registry", registry.url,
        env=env, cwd=scratch,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / ".kiln").mkdir(parents=True)
    outside.mkdir()
    lock_text = (scratch / "skills-lock.json").read_text()
    if link == "skills-lock.json":
        (outside / "user-lock.json").write_text(lock_text)
        (repo / link).symlink_to(outside / "user-lock.json")
    else:
        (repo / "skills-lock.json").write_text(lock_text)
        if link == ".kiln":
            (repo / ".kiln").rmdir()
        (repo / link).symlink_to(outside, target_is_directory=True)
    before = tree_snapshot(outside)
    for args in (["--frozen", "--ci"], ["acme/brand-guidelines", "--yes", "--force"]):
        done = kiln("skills", "install", *args, "--registry", registry.url, env=env, cwd=repo)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "resolves outside the project" in done.stderr and done.stderr.count("\n") == 1
        assert tree_snapshot(outside) == before


def test_removing_a_skill_folder_that_is_a_link_removes_only_the_link(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    env = cli_env(tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    first = kiln(
        "skills", "install", "acme/brand-guidelines", "--yes", "--registry", registry.url,
        env=env, cwd=project,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    folder = project / ".kiln/skills/brand-guidelines"
    shutil.rmtree(folder)
    folder.symlink_to(outside, target_is_directory=True)
    refused = kiln("skills", "remove", "acme/brand-guidelines", env=env, cwd=project)
    assert refused.returncode == 1 and "not an installed skill folder" in refused.stderr
    done = kiln("skills", "remove", "acme/brand-guidelines", "--force", env=env, cwd=project)
    assert done.returncode == 0, done.stderr  # before: a traceback from rmtree on the link
    assert not folder.is_symlink() and (outside / "keep.txt").read_text() == "mine"


def test_removing_a_modified_skill_says_force_removes_it(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    """`remove` of an edited skill told the user "pass --force to overwrite them" (an install's
    hint); a removal's says what --force does there, and the files stay until it is given."""
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    env = cli_env(tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    first = kiln(
        "skills", "install", "acme/brand-guidelines", "--yes", "--registry", registry.url,
        env=env, cwd=project,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    skill_md = project / ".kiln/skills/brand-guidelines/SKILL.md"
    skill_md.write_text(skill_md.read_text() + "my notes\n")
    refused = kiln("skills", "remove", "acme/brand-guidelines", env=env, cwd=project)
    fails(refused, 1, "modified locally (pass --force to remove it anyway")
    assert "overwrite" not in refused.stderr and skill_md.read_text().endswith("my notes\n")
    done = kiln("skills", "remove", "acme/brand-guidelines", "--force", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert not skill_md.parent.exists()
