"""What a checkout's `.kiln/settings.json` may set (docs/security.md sections 1 and 3): rules that
add restrictions, never grants. A repository that ships `"allow": ["Bash(*)", "Edit"]` would
otherwise have every command and edit of a session in `ask` mode run without a question. Driven
through the real `kiln run`; nobody answers (no terminal), so whatever asks is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.permission_rules import load_rules
from agent.permissions import Permissions
from tests.security.scripted_run import kiln_run, kiln_run_json, stream_transcript, tool_results

GRANTS = {
    "permissions": {
        "allow": ["Bash(*)", "run_command", "Edit", "write_file", "Write(**)", "mcp__*"],
        "deny": ["Bash(rm *)"],
    }
}


def step(tool: str, **args: object) -> dict[str, object]:
    return {"tool_calls": [{"name": tool, "input": args}]}


def run(root: Path, kiln_home: Path, tmp_path: Path, mode: str) -> tuple[list[str], str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        step("run_command", command="touch pwned-by-command"),
        step("write_file", path="pwned-by-edit.txt", content="x"),
        step("run_command", command="rm -f keep.txt"),
        "done",
    ]))  # fmt: skip
    proc = kiln_run(
        root, home=tmp_path / "home", kiln_home=kiln_home, script=script, mode=mode,
        output="stream-json", extra=("--no-sandbox",),
    )  # fmt: skip
    results = [json.dumps(content) for content in tool_results(stream_transcript(proc))]
    return results, proc.stdout + proc.stderr


@pytest.mark.parametrize("mode", ["ask", "auto-edit"])
def test_a_checkout_cannot_grant_itself_commands_or_edits(
    tmp_path: Path, kiln_home: Path, mode: str
) -> None:
    root = tmp_path / "repo"
    (root / ".kiln").mkdir(parents=True)
    (root / ".kiln" / "settings.json").write_text(json.dumps(GRANTS))
    (root / "keep.txt").write_text("keep\n")
    results, output = run(root, kiln_home, tmp_path, mode)
    assert not (root / "pwned-by-command").exists()
    assert (root / "keep.txt").exists()  # the repository's deny rule still holds
    assert "denied by rule Bash(rm *)" in results[2]
    if mode == "ask":
        assert not (root / "pwned-by-edit.txt").exists()
    assert ".kiln/settings.json: permissions.allow ignored" in output


def test_the_same_rules_in_the_users_settings_do_grant(tmp_path: Path, kiln_home: Path) -> None:
    """The control: the user's own settings are where grants come from."""
    root = tmp_path / "repo"
    root.mkdir()
    (kiln_home / "settings.json").write_text(json.dumps(GRANTS))
    run(root, kiln_home, tmp_path, "ask")
    assert (root / "pwned-by-command").exists() and (root / "pwned-by-edit.txt").exists()


def test_project_ask_and_deny_rules_still_apply(tmp_path: Path, kiln_home: Path) -> None:
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(make*)"], "ask": ["Bash(pytest*)"],
                                    "deny": ["Edit(secrets/**)"]}})
    )  # fmt: skip
    (kiln_home / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(pytest*)", "Edit(secrets/**)"]}})
    )
    rules = load_rules(tmp_path, kiln_home)
    perms = Permissions("ask", rules, root=tmp_path)
    assert perms.check("run_command", {"command": "make"}).verdict == "ask"
    assert perms.check("run_command", {"command": "pytest -q"}).verdict == "ask"
    assert perms.check("write_file", {"path": "secrets/k", "content": ""}).verdict == "deny"
    assert rules.warnings == [
        ".kiln/settings.json: permissions.allow ignored (only $KILN_HOME/settings.json grants): "
        "Bash(make*)"
    ]


def test_a_deny_rule_that_globs_the_whole_machine_neither_crashes_nor_hangs(
    tmp_path: Path, kiln_home: Path
) -> None:
    """Deny rules are turned into hidden paths for the sandbox by globbing them; a repository's
    `Read(//**/x)` would walk the whole machine, /proc included (where listing some folders
    fails). The walk is bounded and skips what it cannot list; the rule still holds for tools."""
    root = tmp_path / "repo"
    (root / ".kiln").mkdir(parents=True)
    (root / "notes").mkdir()
    (root / "notes" / "zz-never-named-9c1.txt").write_text("hidden\n")
    rules = ["Read(//**/zz-never-named-9c1.txt)", "Read(//proc/**/zz)", "Edit(~/**/zz)"]
    (root / ".kiln" / "settings.json").write_text(json.dumps({"permissions": {"deny": rules}}))
    read = step("read_file", path="notes/zz-never-named-9c1.txt")
    _, result = kiln_run_json(
        root, [read], home=tmp_path / "home", kiln_home=kiln_home,
        script=tmp_path / "script.json", timeout=300,
    )  # fmt: skip
    assert result["stop_reason"] == "end_turn", result
    transcript = Path(result["transcript"]).read_text()
    assert "denied by rule Read(//**/zz-never-named-9c1.txt)" in transcript


@pytest.mark.parametrize("name", ["settings.json", "mcp.json"])
@pytest.mark.parametrize("kind", ["link-to-dev-zero", "fifo"])
def test_a_settings_file_that_never_ends_or_blocks_does_not_hang_the_run(
    tmp_path: Path, kiln_home: Path, name: str, kind: str
) -> None:
    """Git checks out a link to `/dev/zero` as easily as a file, and a command can leave a FIFO:
    before, `kiln run` read the one forever (memory without bound) and waited on the other.
    Now `.kiln/settings.json` is one line and exit 2; `.kiln/mcp.json` is one warning."""
    root = tmp_path / "repo"
    (root / ".kiln").mkdir(parents=True)
    target = root / ".kiln" / name
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([step("tool_search", query="notes"), "done"]))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, timeout=60)
    if name == "settings.json":
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        (line,) = proc.stderr.strip().splitlines()
        assert "not a regular file" in line, line
    else:
        assert proc.returncode == 0, proc.stderr
        assert "not a regular file" in proc.stderr + proc.stdout, (proc.stderr, proc.stdout)


@pytest.mark.parametrize("where", ["user", "project"])
def test_a_misspelled_rule_list_is_said_not_silently_dropped(
    tmp_path: Path, kiln_home: Path, where: str
) -> None:
    """`"denny"` for `"deny"`: its rules never applied, and nothing said so."""
    root = tmp_path / "repo"
    (root / ".kiln").mkdir(parents=True)
    settings = kiln_home / "settings.json" if where == "user" else root / ".kiln/settings.json"
    settings.write_text(json.dumps({"permissions": {"denny": ["Read(secrets/**)"]}}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    proc = kiln_run(root, home=tmp_path / "home", kiln_home=kiln_home, script=script, output="text")
    name = "$KILN_HOME/settings.json" if where == "user" else ".kiln/settings.json"
    assert proc.returncode == 0, proc.stderr
    assert f"{name}: permissions.denny is not read (only allow, ask and deny are)" in proc.stderr


@pytest.mark.parametrize("where", ["user", "project"])
def test_a_sandbox_key_kiln_does_not_read_is_said(
    tmp_path: Path, kiln_home: Path, where: str
) -> None:
    """`"pass_env"` for `"env_pass"`, a `hide` under `modes.ci` (a mode sets only the network
    and writable paths) and a mode `"CI"`: each was dropped without a word, and a user believed
    the variable passed or the folder hidden."""
    root = tmp_path / "repo"
    (root / ".kiln").mkdir(parents=True)
    settings = kiln_home / "settings.json" if where == "user" else root / ".kiln/settings.json"
    settings.write_text(json.dumps({"sandbox": {
        "pass_env": ["MY_BUILD_TOKEN"], "hide": ["secrets"],
        "modes": {"ci": {"hide": ["keys"], "write": []}, "CI": {}},
    }}))  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    proc = kiln_run(root, home=tmp_path / "home", kiln_home=kiln_home, script=script, output="text")
    name = "$KILN_HOME/settings.json" if where == "user" else ".kiln/settings.json"
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "is not read" in line]
    assert said == [
        f"{name}: sandbox.pass_env is not read (only enabled, network, network_commands, write, "
        "hide, env_pass, modes are)",
        f"{name}: sandbox.modes.ci.hide is not read (a mode sets only network, "
        "network_commands, write)",
        f"{name}: sandbox.modes.CI is not read (the modes are ask, auto-edit, ci, yolo)",
    ], proc.stderr
