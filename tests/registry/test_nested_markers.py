"""The small JSON files beside skills, nested 100,000 deep: an installed skill's
`.kiln-install.json` and a project skill's `.kiln-origin.json` are in the workspace, where a
repository or any command writes them, and `mcp-approvals.json` is in `$KILN_HOME`.

Before, each was read with `json.loads`, whose `RecursionError` is no `ValueError`: `kiln skills
verify`, `install` and `remove` ended in `internal error: RecursionError` over the first, and
`kiln skills list` over a repository's skill holding the second. Real `kiln` processes.
"""

from __future__ import annotations

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
