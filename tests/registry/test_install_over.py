"""Installing over an installed skill: another publisher, and the state a crash leaves.

Two real registries on 127.0.0.1, `kiln skills install` as a real process. A skill id is a
name on one registry; `acme/notes` on another registry, signed with another key, is another
publisher's skill. Before, `kiln skills install acme/notes --registry OTHER --yes` replaced the
installed folder and its lock entry without a word (and skipped the downgrade check, which
compares only versions locked from the same registry).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.registry.conftest import (
    LiveRegistry,
    cli_env,
    kiln,
    make_skill,
    publish_skill,
    start_registry,
    tree_snapshot,
)


@pytest.fixture
def other(tmp_path: Path) -> Iterator[LiveRegistry]:
    live = start_registry(tmp_path / "other-data")  # its own signing key
    try:
        yield live
    finally:
        live.stop()


def _install(env: dict[str, str], cwd: Path, url: str, *extra: str):
    return kiln(
        "skills", "install", "acme/notes", "--yes", "--registry", url, *extra, env=env, cwd=cwd
    )


def test_a_skill_signed_by_another_registry_key_is_not_installed_over(
    registry: LiveRegistry, other: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    publish_skill(registry, make_skill(tmp_path / "a", "notes", body="# The real notes\n"), "1.0.0")
    evil = make_skill(tmp_path / "b", "notes", body="# Not the same\n", extra={"run.sh": "id\n"})
    publish_skill(other, evil, "9.0.0")
    env = cli_env(tmp_path / "home")
    assert _install(env, project, registry.url).returncode == 0
    skills, lock = project / ".kiln" / "skills", project / "skills-lock.json"
    before, lock_before = tree_snapshot(skills), lock.read_text()

    result = _install(env, project, other.url)
    assert result.returncode != 0, result.stdout  # before: "updated acme/notes@9.0.0"
    assert "another signing key" in result.stderr and result.stderr.count("\n") <= 2
    assert "--force" in result.stderr
    assert tree_snapshot(skills) == before and lock.read_text() == lock_before

    (skills / "notes").rename(tmp_path / "moved")  # no folder: the lock entry still says whose
    result = _install(env, project, other.url)
    assert result.returncode != 0 and "another signing key" in result.stderr
    assert lock.read_text() == lock_before

    forced = _install(env, project, other.url, "--force")  # the user means it
    assert forced.returncode == 0, forced.stderr
    entry = json.loads(lock.read_text())["skills"]["acme/notes"]
    assert entry["registry"] == other.url and entry["version"] == "9.0.0"


def test_an_install_killed_before_the_lockfile_write_is_not_a_local_edit(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    """A kill -9 after the new folder was renamed into place and before the lockfile was
    written leaves the new files (with their marker) beside the old lock entry. Before, every
    later install or update called that "modified locally" and refused without --force."""
    folder = make_skill(tmp_path / "src", "notes", body="# One\n")
    publish_skill(registry, folder, "1.0.0")
    env = cli_env(tmp_path / "home")
    assert _install(env, project, registry.url).returncode == 0
    lock = project / "skills-lock.json"
    locked_one = lock.read_text()
    (folder / "SKILL.md").write_text(
        (folder / "SKILL.md").read_text().replace("# One", "# Two"), encoding="utf-8"
    )
    publish_skill(registry, folder, "1.1.0")
    assert kiln("skills", "update", "--yes", env=env, cwd=project).returncode == 0
    lock.write_text(locked_one)  # what the kill left: 1.1.0 on disk, 1.0.0 in the lockfile

    update = kiln("skills", "update", "--yes", env=env, cwd=project)
    assert update.returncode == 0, update.stderr
    assert json.loads(lock.read_text())["skills"]["acme/notes"]["version"] == "1.1.0"
    verify = kiln("skills", "verify", env=env, cwd=project)
    assert verify.returncode == 0, verify.stdout + verify.stderr

    # A real local edit is still refused.
    (project / ".kiln" / "skills" / "notes" / "SKILL.md").write_text("# mine\n")
    edited = _install(
        env,
        project,
        registry.url,
    )
    assert edited.returncode != 0 and "modified locally" in edited.stderr


def test_folders_a_killed_install_left_are_swept_by_the_next_one(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    """A kill -9 during the extraction or the swap leaves `.tmp-NAME-xxxxxxxx` or
    `.old-NAME-xxxxxxxx` next to the skill: hidden from discovery, but up to 32 MB each, and
    before, kept for ever. The next install removes those older than an hour, another
    skill's too (a younger one may be an install running now)."""
    import os
    import time

    folder = make_skill(tmp_path / "src", "notes", body="# One\n")
    publish_skill(registry, folder, "1.0.0")
    env = cli_env(tmp_path / "home")
    skills = project / ".kiln" / "skills"
    skills.mkdir(parents=True)
    hour_ago = time.time() - 2 * 3600
    names = [
        ".tmp-notes-0123abcd",
        ".old-notes-89abcdef",
        ".tmp-notes-fedcba98",
        ".tmp-notes-x-01234567",
    ]
    for name in names:
        (skills / name).mkdir()
        (skills / name / "SKILL.md").write_text("---\nname: notes\n---\n")
        if name != ".tmp-notes-fedcba98":
            os.utime(skills / name, (hour_ago, hour_ago))
    assert _install(env, project, registry.url).returncode == 0
    left = sorted(p.name for p in skills.iterdir())
    assert left == [".tmp-notes-fedcba98", "notes"], left


def test_an_update_naming_a_skill_not_locked_changes_nothing(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    """Every id named is checked first. Before, `update acme/notes acme/typo` updated notes,
    then stopped at the typo: half of what was asked, with an error saying nothing moved."""
    folder = make_skill(tmp_path / "src", "notes", body="# One\n")
    publish_skill(registry, folder, "1.0.0")
    env = cli_env(tmp_path / "home")
    assert _install(env, project, registry.url).returncode == 0
    lock = project / "skills-lock.json"
    before = lock.read_text()
    publish_skill(registry, folder, "1.1.0")

    update = kiln("skills", "update", "acme/notes", "acme/typo", "--yes", env=env, cwd=project)
    assert update.returncode == 2, update.stderr
    assert (
        update.stderr.startswith("kiln: acme/typo is not in ") and "acme/notes" not in update.stderr
    )
    assert lock.read_text() == before and update.stdout == ""
    marker = project / ".kiln" / "skills" / "notes" / ".kiln-install.json"
    assert json.loads(marker.read_text())["version"] == "1.0.0"
