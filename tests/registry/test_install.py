"""Verified installs against a live registry: install, update, yanks, local edits, review and CI
rules, frozen and offline installs, scopes, concurrent installs (a lying registry or mirror:
``test_install_refusals.py``). Each refusal leaves the skills folder and the lockfile as they were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skills_registry.archive import MARKER_FILE, sha256_hex
from skills_registry.client import Cache, RegistryClient
from skills_registry.install import Installer, Scope
from skills_registry.registry.errors import (
    IntegrityError,
    LocallyModified,
    NotFound,
    RegistryUnavailable,
    ReviewRequired,
)
from tests.registry.conftest import (
    FIXTURES,
    LiveRegistry,
    make_skill,
    publish_skill,
    start_registry,
    tree_snapshot,
)


def test_install_update_and_lockfile(registry: LiveRegistry, project: Path, tmp_path: Path) -> None:
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    scope = Scope.project(project)
    with RegistryClient(registry.url) as client:
        first = Installer(scope, yes=True).install(client, "acme/brand-guidelines@^1.0.0")
        assert first.action == "installed"
        target = project / ".kiln/skills/brand-guidelines"
        assert (target / "SKILL.md").read_bytes() == (
            FIXTURES / "brand-guidelines/SKILL.md"
        ).read_bytes()
        marker = json.loads((target / MARKER_FILE).read_text())
        assert marker["id"] == "acme/brand-guidelines" and marker["thirdParty"] is True
        lock_text = (project / "skills-lock.json").read_text()
        lock = json.loads(lock_text)["skills"]["acme/brand-guidelines"]
        assert lock["version"] == "1.0.0" and lock["requested"] == "^1.0.0"
        assert (
            Installer(scope, yes=True).install(client, "acme/brand-guidelines").action
            == "unchanged"
        )
        assert (project / "skills-lock.json").read_text() == lock_text  # stable, no timestamps

        # a new compatible version arrives; a major bump is out of range
        changed = tmp_path / "v2" / "brand-guidelines"
        changed.parent.mkdir()
        import shutil

        shutil.copytree(FIXTURES / "brand-guidelines", changed)
        (changed / "NOTES.md").write_text("new in 1.1.0\n")
        publish_skill(registry, changed, "1.1.0")
        publish_skill(registry, changed, "2.0.0")
        updated = Installer(scope, yes=True).install(client, "acme/brand-guidelines@^1.0.0")
    assert (updated.action, updated.version) == ("updated", "1.1.0")
    assert (target / "NOTES.md").exists()
    assert not list((project / ".kiln/skills").glob(".tmp-*")) and not list(
        (project / ".kiln/skills").glob(".old-*")
    )


def test_yanked_versions_drop_out_of_resolution(registry: LiveRegistry, project: Path) -> None:
    for version in ("1.0.0", "1.1.0"):
        publish_skill(registry, FIXTURES / "internal-comms", version)
    with RegistryClient(registry.url, registry.token("acme")) as client:
        client.set_status("acme/internal-comms", "1.1.0", "yanked", "bad release")
        got = Installer(Scope.project(project), yes=True).install(
            client, "acme/internal-comms@^1.0.0"
        )
        assert got.version == "1.0.0"
        exact = Installer(Scope.project(project), yes=True).install(
            client, "acme/internal-comms@1.1.0"
        )
        assert exact.version == "1.1.0"  # an exact pin (a lockfile) still gets it
        with pytest.raises(NotFound, match="no version"):
            Installer(Scope.project(project), yes=True).install(
                client, "acme/internal-comms@^1.2.0"
            )


def test_local_edits_are_never_overwritten_without_force(
    registry: LiveRegistry, project: Path
) -> None:
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.1")
    scope = Scope.project(project)
    with RegistryClient(registry.url) as client:
        Installer(scope, yes=True).install(client, "acme/brand-guidelines@1.0.0")
        skill_md = project / ".kiln/skills/brand-guidelines/SKILL.md"
        skill_md.write_text(skill_md.read_text() + "\nmy local note\n")
        before = tree_snapshot(project)
        with pytest.raises(LocallyModified, match="modified locally"):
            Installer(scope, yes=True).install(client, "acme/brand-guidelines@1.0.1")
        assert tree_snapshot(project) == before
        assert [r["ok"] for r in Installer(scope).verify()] == [False]
        Installer(scope, yes=True, force=True).install(client, "acme/brand-guidelines@1.0.1")
    assert "my local note" not in skill_md.read_text()
    assert [r["ok"] for r in Installer(scope).verify()] == [True]


def test_a_local_skill_with_the_same_name_is_not_clobbered(
    registry: LiveRegistry, project: Path
) -> None:
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    make_skill(project / ".kiln/skills", "brand-guidelines", description="mine")
    before = tree_snapshot(project)
    with (
        RegistryClient(registry.url) as client,
        pytest.raises(LocallyModified, match="holds a local skill"),
    ):
        Installer(Scope.project(project), yes=True).install(client, "acme/brand-guidelines")
    assert tree_snapshot(project) == before


def test_review_and_ci_rules(registry: LiveRegistry, project: Path, tmp_path: Path) -> None:
    skill = make_skill(
        tmp_path,
        "deploy-helper",
        extra={"scripts/deploy.sh": "#!/bin/sh\ncurl https://api.example.org\n"},
    )
    publish_skill(registry, skill, "1.0.0")
    scope = Scope.project(project)
    seen: list[dict] = []
    with RegistryClient(registry.url) as client:
        with pytest.raises(ReviewRequired, match="not confirmed"):
            Installer(scope, confirm=lambda s: seen.append(s) or False).install(
                client, "acme/deploy-helper"
            )
        assert seen[0]["scripts"] == ["scripts/deploy.sh"]
        assert {f["rule"] for f in seen[0]["findings"]} >= {"script", "network"}
        assert not (project / ".kiln/skills/deploy-helper").exists()
        with pytest.raises(ReviewRequired, match="not pinned in the lockfile"):
            Installer(scope, yes=True, ci=True).install(client, "acme/deploy-helper")
        Installer(scope, confirm=lambda s: True).install(client, "acme/deploy-helper")
        (project / ".kiln/skills/deploy-helper").rename(tmp_path / "moved")
        # pinned in the lockfile: CI may reinstall it
        assert Installer(scope, ci=True).install(client, "acme/deploy-helper").action == "installed"


def test_frozen_and_offline_installs(tmp_path: Path, project: Path, kiln_home: Path) -> None:
    live = start_registry(tmp_path / "data")
    try:
        publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
        publish_skill(live, FIXTURES / "internal-comms", "1.0.0")
        scope = Scope.project(project)
        with RegistryClient(live.url) as client:
            for spec in ("acme/brand-guidelines", "acme/internal-comms@1.0.0"):
                Installer(scope, yes=True).install(client, spec)
    finally:
        live.stop()
    import shutil

    shutil.rmtree(project / ".kiln")

    def no_network(url: str) -> RegistryClient:
        raise AssertionError(f"frozen install from the cache must not contact {url}")

    results = Installer(scope).install_frozen(no_network)
    assert sorted(r.action for r in results) == ["installed", "installed"]
    assert [r["ok"] for r in Installer(scope).verify()] == [True, True]
    shutil.rmtree(project / ".kiln/skills/internal-comms")
    with RegistryClient(live.url, timeout=2) as client:  # offline: cached documents and blobs
        assert (
            Installer(scope, yes=True).install(client, "acme/internal-comms@1.0.0").action
            == "installed"
        )
        with pytest.raises(RegistryUnavailable):
            Installer(scope, yes=True).install(client, "acme/frontend-design")

    assert Cache().get_blob(
        json.loads((project / "skills-lock.json").read_text())["skills"]["acme/internal-comms"][
            "sha256"
        ]
    )


def test_lockfile_whose_hashes_no_longer_match(registry: LiveRegistry, project: Path) -> None:
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    scope = Scope.project(project)
    with RegistryClient(registry.url) as client:
        Installer(scope, yes=True).install(client, "acme/brand-guidelines")
    lock_path = project / "skills-lock.json"
    lock = json.loads(lock_path.read_text())
    good = dict(lock["skills"]["acme/brand-guidelines"])

    lock["skills"]["acme/brand-guidelines"]["treeHash"] = "0" * 64
    lock_path.write_text(json.dumps(lock))
    before = tree_snapshot(project)
    # The folder is what its marker records (not a local edit): the lockfile is what is wrong.
    with pytest.raises(IntegrityError, match="tree hash"):
        Installer(scope).install_frozen(lambda url: RegistryClient(url))
    assert tree_snapshot(project) == before
    with pytest.raises(IntegrityError, match="tree hash"):
        Installer(scope, force=True).install_frozen(lambda url: RegistryClient(url))
    assert tree_snapshot(project) == before

    lock["skills"]["acme/brand-guidelines"] = {**good, "sha256": sha256_hex(b"something else")}
    lock_path.write_text(json.dumps(lock))
    import shutil

    shutil.rmtree(project / ".kiln/skills/brand-guidelines")
    with pytest.raises(IntegrityError, match="does not match"):
        Installer(scope).install_frozen(lambda url: RegistryClient(url))
    assert not (project / ".kiln/skills/brand-guidelines").exists()


def test_user_scope_install_and_remove(
    registry: LiveRegistry, kiln_home: Path, project: Path
) -> None:
    publish_skill(registry, FIXTURES / "frontend-design", "1.0.0")
    scope = Scope.user()
    with RegistryClient(registry.url) as client:
        got = Installer(scope, yes=True).install(client, "acme/frontend-design")
    assert got.path == kiln_home / "skills" / "frontend-design"
    assert (
        "acme/frontend-design" in json.loads((kiln_home / "skills-lock.json").read_text())["skills"]
    )
    assert not (project / "skills-lock.json").exists()
    with pytest.raises(NotFound):
        Installer(scope).remove("acme/other")
    Installer(scope).remove("acme/frontend-design")
    assert not got.path.exists()
    assert json.loads((kiln_home / "skills-lock.json").read_text())["skills"] == {}


def test_hostile_lockfile_ids_are_refused(project: Path) -> None:
    (project / "skills-lock.json").write_text(
        json.dumps(
            {
                "lockfileVersion": 1,
                "skills": {
                    "acme/../../etc": {
                        "version": "1.0.0",
                        "requested": "1.0.0",
                        "registry": "http://127.0.0.1:9",
                        "sha256": "0" * 64,
                        "treeHash": "0" * 64,
                        "signature": "",
                        "keyId": "",
                        "path": "../../etc",
                        "scripts": [],
                    }
                },
            }
        )
    )
    before = tree_snapshot(project.parent)
    from skills_registry.registry.errors import UsageError

    with pytest.raises(UsageError, match="invalid skill id"):
        Installer(Scope.project(project)).install_frozen(lambda url: RegistryClient(url, timeout=1))
    assert tree_snapshot(project.parent) == before


def test_concurrent_installs_keep_every_lock_entry(registry: LiveRegistry, project: Path) -> None:
    import threading

    names = ("brand-guidelines", "internal-comms", "frontend-design")
    for name in names:
        publish_skill(registry, FIXTURES / name, "1.0.0")
    installers = [
        Installer(Scope.project(project), yes=True) for _ in names
    ]  # all read an empty lock
    errors: list[BaseException] = []

    def run(installer: Installer, name: str) -> None:
        try:
            with RegistryClient(registry.url) as client:
                installer.install(client, f"acme/{name}")
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=pair) for pair in zip(installers, names, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(json.loads((project / "skills-lock.json").read_text())["skills"]) == [
        f"acme/{n}" for n in sorted(names)
    ]
