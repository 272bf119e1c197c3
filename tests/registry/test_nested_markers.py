"""The small JSON files beside skills, nested 100,000 deep, lost or wrong: an installed skill's
`.kiln-install.json` and a project skill's `.kiln-origin.json` are in the workspace, where a
repository or any command writes them, and `mcp-approvals.json` is in `$KILN_HOME`.

Before, each was read with `json.loads`, whose `RecursionError` is no `ValueError`: `kiln skills
verify`, `install` and `remove` ended in `internal error: RecursionError` over the first, and
`kiln skills list` over a repository's skill holding the second. Real `kiln` processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skills_registry.errors import McpConfigError
from skills_registry.mcp_trust import APPROVALS_FILE, read_approvals
from tests.registry.conftest import FIXTURES, LiveRegistry, cli_env, fails, kiln, publish_skill

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deep_install_marker_is_a_skill_that_fails_verification(
    live: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=live.url)
    done = kiln("skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    (project / ".kiln/skills/brand-guidelines/.kiln-install.json").write_text(DEEP)
    verify = kiln("skills", "verify", env=env, cwd=project)
    fails(verify, 5, "failed verification: acme/brand-guidelines")
    assert "install marker missing" in verify.stdout
    again = kiln("skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project)
    fails(again, 1, "holds a local skill, not acme/brand-guidelines")
    fails(kiln("skills", "remove", "acme/brand-guidelines", env=env, cwd=project), 1, "not")


def test_a_deep_origin_marker_in_a_repository_skill_is_read_as_third_party(
    tmp_path: Path, project: Path
) -> None:
    folder = project / ".kiln/skills/mine"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: mine\ndescription: Mine.\n---\nbody\n")
    (folder / ".kiln-origin.json").write_text(DEEP)
    listed = kiln("skills", "list", env=cli_env(tmp_path / "home"), cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert "mine  third-party  Mine." in listed.stdout  # an unreadable marker errs that way


def test_deep_mcp_approvals_are_a_config_error(tmp_path: Path) -> None:
    (tmp_path / APPROVALS_FILE).write_text(DEEP)
    with pytest.raises(McpConfigError, match="JSON nested deeper than 64 levels"):
        read_approvals(tmp_path, tmp_path)


@pytest.mark.parametrize("marker", ["lost", "another id", "stale tree hash"])
def test_the_install_verify_suggests_writes_the_marker_again(
    live: LiveRegistry, tmp_path: Path, project: Path, marker: str
) -> None:
    """`verify` fails on a folder whose marker is lost or wrong and says "reinstall with `kiln
    skills install --frozen --force`"; that install said "unchanged" (the files match the
    lockfile, and the marker is not hashed) and left the marker as it was, so verify kept
    failing."""
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=live.url)
    done = kiln("skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    path = project / ".kiln/skills/brand-guidelines/.kiln-install.json"
    record = json.loads(path.read_text())
    if marker == "lost":
        path.unlink()
    else:
        key = "id" if marker == "another id" else "treeHash"
        path.write_text(json.dumps({**record, key: "acme/other" if key == "id" else "0" * 64}))
    if marker != "stale tree hash":  # a stale hash alone verifies: only the id is checked
        fails(kiln("skills", "verify", env=env, cwd=project), 5, "install --frozen --force")
    again = kiln("skills", "install", "--frozen", "--force", env=env, cwd=project)
    assert again.returncode == 0, again.stderr
    assert "installed acme/brand-guidelines@1.0.0" in again.stdout
    assert json.loads(path.read_text()) == record
    assert kiln("skills", "verify", env=env, cwd=project).returncode == 0
