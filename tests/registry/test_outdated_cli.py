"""`kiln skills outdated` when a locked skill has no version left to want: every release
yanked. The line says "none" (JSON keeps null), never Python's `None`.

A locked version that was yanked is marked as such, with the publisher's reason."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from skills_registry.client import RegistryClient
from tests.registry.conftest import FIXTURES, cli_env, kiln, publish_skill, start_registry

Outdated = tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]


def _outdated_after_yank(
    tmp_path: Path, project: Path, versions: list[str], yanked: str, reason: str
) -> Outdated:
    """Publish ``versions``, install the newest, yank ``yanked``: `outdated` as text and JSON."""
    live = start_registry(tmp_path / "data")
    try:
        for version in versions:
            publish_skill(live, FIXTURES / "brand-guidelines", version)
        env = cli_env(tmp_path / "home")
        installed = kiln(
            "skills", "install", "acme/brand-guidelines", "--registry", live.url, "--yes",
            env=env, cwd=project,
        )  # fmt: skip
        assert installed.returncode == 0, installed.stderr
        with RegistryClient(live.url, live.token("acme")) as client:
            client.set_status("acme/brand-guidelines", yanked, "yanked", reason)
        text = kiln("skills", "outdated", env=env, cwd=project)
        as_json = kiln("skills", "outdated", "--json", env=env, cwd=project)
    finally:
        live.stop()
    assert text.returncode == 0, text.stderr
    return text, as_json


def test_outdated_with_every_version_yanked(tmp_path: Path, project: Path) -> None:
    text, as_json = _outdated_after_yank(tmp_path, project, ["1.0.0"], "1.0.0", "broken")
    assert (
        text.stdout.strip()
        == "acme/brand-guidelines  current 1.0.0 (yanked: broken)  wanted none  latest none"
    )
    assert json.loads(as_json.stdout) == [
        {
            "id": "acme/brand-guidelines",
            "current": "1.0.0",
            "status": "yanked",
            "statusReason": "broken",
            "wanted": None,
            "latest": None,
        }
    ]


def test_outdated_says_when_the_locked_version_was_yanked(tmp_path: Path, project: Path) -> None:
    """`install --frozen` keeps installing a locked version after it is yanked; `outdated` is
    where a user learns it. Before, it printed `current 1.1.0  wanted none` and no reason, as
    if 1.1.0 were merely out of the range."""
    text, as_json = _outdated_after_yank(
        tmp_path, project, ["1.0.0", "1.1.0"], "1.1.0", "leaks tokens"
    )
    assert text.stdout.strip() == (
        "acme/brand-guidelines  current 1.1.0 (yanked: leaks tokens)  wanted none  latest 1.0.0"
    )
    assert json.loads(as_json.stdout) == [
        {
            "id": "acme/brand-guidelines",
            "current": "1.1.0",
            "status": "yanked",
            "statusReason": "leaks tokens",
            "wanted": None,
            "latest": "1.0.0",
        }
    ]


def test_update_off_a_yanked_version_with_nothing_else_in_its_range(
    registry, tmp_path: Path, project: Path
) -> None:  # type: ignore[no-untyped-def]
    """`install ID` locks `^1.1.0`; with 1.1.0 yanked, only 1.0.0 is left, below that range.
    Before, `update` said "no version matches '^1.1.0'" and advised naming a yanked version
    exactly, the opposite of moving off it; it now says what happened and how to move."""
    for version in ("1.0.0", "1.1.0"):
        publish_skill(registry, FIXTURES / "brand-guidelines", version)
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)
    installed = kiln("skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project)
    assert installed.returncode == 0, installed.stderr
    with RegistryClient(registry.url, registry.token("acme")) as client:
        client.set_status("acme/brand-guidelines", "1.1.0", "yanked", "leaks tokens")
    before = (project / "skills-lock.json").read_text()
    update = kiln("skills", "update", "--yes", env=env, cwd=project)
    assert update.returncode == 1, update.stdout
    [line] = update.stderr.strip().splitlines()
    assert (
        "acme/brand-guidelines@1.1.0 is yanked (leaks tokens) and no other version matches '^1.1.0'"
        in line
    )
    assert "kiln skills install acme/brand-guidelines@1.0.0" in line
    assert "name a yanked version exactly" not in line
    assert (project / "skills-lock.json").read_text() == before
