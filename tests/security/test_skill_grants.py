"""Third-party grants never widen permissions: a skill's allowed-tools only narrow, unless the
user granted them at install (recorded in the user's lockfile) — a project copy of the same skill,
or a grant written into a project lockfile, gets nothing."""

from __future__ import annotations

import json
from pathlib import Path

from agent.protocols import PermissionRequest
from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, DiskHost, Session
from skills_registry.archive import build_archive, read_dir
from skills_registry.client import RegistryClient
from skills_registry.install import Installer, Scope
from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill


def call(tool: str, **args: object) -> dict:
    return {"tool_calls": [{"name": tool, "input": args}]}


async def run_skill(root: Path, mode: str = "ask") -> tuple[list[PermissionRequest], Session]:
    asked: list[PermissionRequest] = []

    def answer(request: PermissionRequest) -> str:
        asked.append(request)
        return "reject_once"

    model = ScriptedModel([call("skill", name="builder"), call("run_command", command="touch built.txt"),
                           call("write_file", path="notes.txt", content="x"), "done"])  # fmt: skip
    session = Session.create(
        root, host=DiskHost(answer=answer), config=AgentConfig(mode=mode), model=model
    )
    await session.prompt("build")
    return asked, session


def publish(registry: LiveRegistry, tmp_path: Path) -> None:
    folder = make_skill(tmp_path / "src", "builder", front="allowed-tools: Bash\n")
    with RegistryClient(registry.url, registry.token("acme")) as client:
        client.publish("acme/builder", "1.0.0", build_archive(read_dir(folder)))


async def test_user_grant_at_install_widens_only_that_skill(
    live_registry: LiveRegistry, tmp_path: Path, kiln_home: Path
) -> None:
    publish(live_registry, tmp_path)
    shown: list[dict] = []
    with RegistryClient(live_registry.url) as client:
        Installer(Scope.user(), yes=True, grant=lambda s: shown.append(s) or True).install(
            client, "acme/builder"
        )
    assert shown[0]["allowedTools"] == "Bash"  # the user saw the list when asked
    lock = json.loads((kiln_home / "skills-lock.json").read_text())
    assert lock["skills"]["acme/builder"]["grants"] == ["Bash"]
    root = tmp_path / "ws"
    root.mkdir()
    asked, _ = await run_skill(root)
    assert (root / "built.txt").exists()  # granted: ran without a question
    assert [r.tool for r in asked] == ["write_file"]  # outside the skill's list: still asked


async def test_without_a_grant_allowed_tools_only_narrow(
    live_registry: LiveRegistry, tmp_path: Path, kiln_home: Path
) -> None:
    publish(live_registry, tmp_path)
    with RegistryClient(live_registry.url) as client:
        Installer(Scope.user(), yes=True, grant=lambda s: False).install(client, "acme/builder")
    assert (
        "grants"
        not in json.loads((kiln_home / "skills-lock.json").read_text())["skills"]["acme/builder"]
    )
    root = tmp_path / "ws"
    root.mkdir()
    asked, _ = await run_skill(root)
    assert not (root / "built.txt").exists() and [r.tool for r in asked][:1] == ["run_command"]
    # In auto-edit, write_file is normally free; outside the active skill's list it is asked.
    asked, _ = await run_skill(root, "auto-edit")
    assert "write_file" in [r.tool for r in asked]


async def test_a_project_copy_and_a_project_lockfile_get_no_grant(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = tmp_path / "ws"
    make_skill(root / ".kiln" / "skills", "builder", front="allowed-tools: Bash Write\n")
    (root / "skills-lock.json").write_text(json.dumps({"lockfileVersion": 1, "skills": {
        "acme/builder": {"path": ".kiln/skills/builder", "grants": ["Bash", "Write"]}}}))  # fmt: skip
    (kiln_home / "skills-lock.json").write_text(json.dumps({"lockfileVersion": 1, "skills": {
        "acme/builder": {"path": "skills/builder", "grants": ["Bash"]}}}))  # fmt: skip
    asked, _ = await run_skill(root)
    assert not (root / "built.txt").exists()
    assert [r.tool for r in asked] == ["run_command", "write_file"]


def test_grant_tools_is_refused_for_a_project_install(
    live_registry: LiveRegistry, tmp_path: Path, kiln_home: Path
) -> None:
    """A project lockfile's grants are never read, so `--grant-tools` there would grant nothing
    while the user thinks it did: refused in one line, nothing installed; `--user` records it."""
    publish(live_registry, tmp_path)
    root = tmp_path / "ws"
    root.mkdir()
    env = cli_env(kiln_home, KILN_REGISTRY=live_registry.url)
    refused = kiln("skills", "install", "acme/builder", "--yes", "--grant-tools", env=env, cwd=root)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "--grant-tools needs --user" in refused.stderr
    assert not (root / ".kiln").exists() and not (root / "skills-lock.json").exists()

    args = ("skills", "install", "acme/builder", "--user", "--yes", "--grant-tools")
    granted = kiln(*args, env=env, cwd=root)
    assert granted.returncode == 0, granted.stderr
    lock = json.loads((kiln_home / "skills-lock.json").read_text())
    assert lock["skills"]["acme/builder"]["grants"] == ["Bash"]
