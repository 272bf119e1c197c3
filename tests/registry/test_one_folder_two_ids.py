"""Two ids with one folder name: `acme/deploy` and `evil/deploy` both install into
`.kiln/skills/deploy`, so a lockfile can hold only one of them.

Real registry on 127.0.0.1, `kiln` as real processes. Before, `install evil/deploy --force`
over `acme/deploy` replaced the folder but kept `acme/deploy`'s lock entry beside the new one:
`verify` then failed and advised `install --frozen --force`, which installed `acme/deploy` and
then `evil/deploy` over it, printing both as installed; a fresh checkout's `install --frozen`
failed, and `remove acme/deploy` refused. A lockfile listing both ids (a cloned repository's)
made `install --frozen --force` do the same flip.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.registry.conftest import (
    LiveRegistry,
    cli_env,
    kiln,
    make_skill,
    publish_skill,
    tree_snapshot,
)


def _acme_installed(registry: LiveRegistry, tmp_path: Path, project: Path) -> dict[str, str]:
    """`acme/deploy` and `evil/deploy` published, `acme/deploy` installed: the CLI's env."""
    publish_skill(registry, make_skill(tmp_path / "a", "deploy", body="# Acme\n"), "1.0.0")
    evil = make_skill(tmp_path / "b", "deploy", body="# Evil\n")
    publish_skill(registry, evil, "1.0.0", namespace="evil")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)
    assert _skills(project, "install", "acme/deploy", "--yes", env=env).returncode == 0
    return env


def _skills(cwd: Path, *args: str, env: dict[str, str]):
    return kiln("skills", *args, env=env, cwd=cwd)


def test_forcing_another_id_into_a_folder_drops_the_replaced_lock_entry(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    env = _acme_installed(registry, tmp_path, project)
    refused = _skills(project, "install", "evil/deploy", "--yes", env=env)
    assert refused.returncode != 0 and "holds acme/deploy" in refused.stderr

    forced = _skills(project, "install", "evil/deploy", "--yes", "--force", env=env)
    assert forced.returncode == 0, forced.stderr
    assert "replaces acme/deploy" in forced.stderr
    lock = json.loads((project / "skills-lock.json").read_text())
    assert list(lock["skills"]) == ["evil/deploy"]  # before: acme/deploy too
    verified = _skills(project, "verify", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr

    (project / ".kiln" / "skills" / "deploy").rename(tmp_path / "gone")  # a fresh checkout
    frozen = _skills(project, "install", "--frozen", env=env)
    assert frozen.returncode == 0, frozen.stderr
    marker = project / ".kiln" / "skills" / "deploy" / ".kiln-install.json"
    assert json.loads(marker.read_text())["id"] == "evil/deploy"


def test_a_lockfile_naming_two_ids_for_one_folder_installs_nothing(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    env = _acme_installed(registry, tmp_path, project)
    lock_path = project / "skills-lock.json"
    acme = json.loads(lock_path.read_text())["skills"]["acme/deploy"]
    other = tmp_path / "other"
    other.mkdir()
    assert _skills(other, "install", "evil/deploy", "--yes", env=env).returncode == 0
    evil = json.loads((other / "skills-lock.json").read_text())["skills"]["evil/deploy"]
    both = {"lockfileVersion": 1, "skills": {"acme/deploy": acme, "evil/deploy": evil}}
    lock_path.write_text(json.dumps(both))
    before = tree_snapshot(project / ".kiln")

    for extra in ([], ["--force"]):
        result = _skills(project, "install", "--frozen", *extra, env=env)
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.count("\n") <= 2 and not result.stdout
        assert "acme/deploy and evil/deploy" in result.stderr
        assert "one folder" in result.stderr
        assert tree_snapshot(project / ".kiln") == before  # before: evil/deploy over acme's

    # The hint's way out: removing the entry whose skill the folder does not hold drops the
    # entry alone (before: refused, as the folder "holds acme/deploy"; with --force it deleted
    # acme's folder and left acme's entry).
    skills = tree_snapshot(project / ".kiln" / "skills")
    removed = _skills(project, "remove", "evil/deploy", env=env)
    assert removed.returncode == 0, removed.stderr
    assert "holds acme/deploy" in removed.stdout
    assert list(json.loads(lock_path.read_text())["skills"]) == ["acme/deploy"]
    assert tree_snapshot(project / ".kiln" / "skills") == skills
    marker = project / ".kiln" / "skills" / "deploy" / ".kiln-install.json"
    assert json.loads(marker.read_text())["id"] == "acme/deploy"
    frozen = _skills(project, "install", "--frozen", env=env)
    assert frozen.returncode == 0 and "unchanged acme/deploy" in frozen.stdout, frozen.stderr


def test_an_install_never_takes_the_folder_a_lock_entry_names(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    """The checkout's lockfile installs `acme/deploy`, not yet installed here: installing
    `evil/deploy` took its folder and added a second entry beside it."""
    env = _acme_installed(registry, tmp_path, project)
    (project / ".kiln" / "skills" / "deploy").rename(tmp_path / "gone")
    lock_before = (project / "skills-lock.json").read_text()
    result = _skills(project, "install", "evil/deploy", "--yes", env=env)
    assert result.returncode != 0 and "where the lockfile installs acme/deploy" in result.stderr
    assert "kiln skills remove acme/deploy" in result.stderr
    assert (project / "skills-lock.json").read_text() == lock_before
    assert not (project / ".kiln" / "skills" / "deploy").exists()
