"""The permission engine: modes, rules from settings files, dangerous commands, session answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.errors import ConfigError
from agent.permission_rules import load_rules
from agent.permissions import Permissions, classify_command


@pytest.mark.parametrize(
    ("command", "danger"),
    [
        ("pytest -q", None),
        ("curl http://x", "network"),
        ("FOO=1 wget x", "network"),
        ("make && ssh host", "network"),
        ("python -c 'import urllib' https://evil", "network"),
        ("rm -rf ~", "destructive"),
        ("rm -rf /", "destructive"),
        # docs/security.md section 5: every spelling of the home folder and of "everything here"
        ("rm -rf ~/", "destructive"),
        ("rm -rf ~/*", "destructive"),
        ('rm -rf "$HOME"', "destructive"),
        ("rm -rf ${HOME}/", "destructive"),
        ("rm --recursive --force ~", "destructive"),
        ("rm -rf ./*", "destructive"),
        ("rm -rf ../*", "destructive"),
        ("rm -rf .venv", None),
        ("rm -rf $HOMEBREW_CACHE_DIR", None),
        ("sudo ls", "destructive"),
        ("git push origin main", "network"),
        ("cat ~/.ssh/id_rsa", "secrets"),
        ("pip install requests", "network"),
        ("rm -rf build/", None),
        ("git status", None),
    ],
)
def test_classify_command(command: str, danger: str | None) -> None:
    assert classify_command(command) == danger


def test_modes() -> None:
    edit = ("edit_file", {"path": "a.py", "old_text": "x", "new_text": "y"})
    run = ("run_command", {"command": "pytest"})
    curl = ("run_command", {"command": "curl http://x"})
    read = ("read_file", {"path": "a.py"})
    expect = {
        "ask": ["ask", "ask", "ask", "allow"],
        "auto-edit": ["allow", "ask", "ask", "allow"],
        "ci": ["allow", "allow", "deny", "allow"],
        "yolo": ["allow", "allow", "allow", "allow"],
    }
    for mode, verdicts in expect.items():
        perms = Permissions(mode)
        assert [perms.check(*c).verdict for c in (edit, run, curl, read)] == verdicts, mode
    with pytest.raises(ConfigError):
        Permissions("sometimes")


def test_external_content_raises_the_bar() -> None:
    perms = Permissions("auto-edit")
    assert perms.check("edit_file", {"path": "KILN.md"}, from_external=True).verdict == "ask"
    assert perms.check("edit_file", {"path": "src/a.py"}, from_external=True).verdict == "allow"
    # yolo asks nothing, as the README says; the flag still marks the action for the panels
    yolo = Permissions("yolo").check("remember", {"text": "x"}, from_external=True)
    assert (yolo.verdict, yolo.external) == ("allow", True)
    assert Permissions("ci").check("edit_file", {"path": ".kiln/settings.json"}).verdict == "deny"


def test_rules_from_settings_and_session_answers(tmp_path: Path) -> None:
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["edit_file(secrets/*)"]}})
    )
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(
        json.dumps(
            {"permissions": {"allow": ["run_command(pytest*)"], "ask": ["read_file(*.env)"]}}
        )
    )
    perms = Permissions("ask", load_rules(tmp_path, home))
    assert perms.check("run_command", {"command": "pytest -q"}).verdict == "allow"
    assert perms.check("run_command", {"command": "make"}).verdict == "ask"
    assert perms.check("edit_file", {"path": "secrets/key.txt"}).verdict == "deny"
    assert perms.check("read_file", {"path": "prod.env"}).verdict == "ask"
    perms.remember_answer("run_command", {"command": "make"}, "allow_always")
    assert perms.check("run_command", {"command": "make"}).verdict == "allow"
    perms.remember_answer("run_command", {"command": "make clean"}, "reject_always")
    assert perms.check("run_command", {"command": "make clean"}).verdict == "deny"


def test_claudes_mcp_tool_spelling_names_kilns_mcp_tools(tmp_path: Path) -> None:
    """A rule written for Claude Code (``mcp__SERVER__tool``) covers Kiln's ``SERVER__tool``:
    a deny rule copied over must not silently protect nothing."""
    home = tmp_path / "home"
    home.mkdir()
    rules = {"deny": ["mcp__notes__*"], "allow": ["mcp__web__fetch", "github__list_*"]}
    (home / "settings.json").write_text(json.dumps({"permissions": rules}))
    perms = Permissions("ask", load_rules(tmp_path, home))
    assert perms.check("notes__add_numbers", {}).verdict == "deny"
    assert perms.check("web__fetch", {}).verdict == "allow"
    assert perms.check("github__list_issues", {}).verdict == "allow"
    assert perms.check("web__post", {}).verdict == "ask"
    everything = {"allow": ["mcp__*"]}  # Claude: every MCP tool; never a built-in one
    (home / "settings.json").write_text(json.dumps({"permissions": everything}))
    perms = Permissions("ask", load_rules(tmp_path, home))
    assert perms.check("web__post", {}).verdict == "allow"
    assert perms.check("edit_file", {"path": "app.py"}).verdict == "ask"
    assert perms.check("remember", {"text": "x"}).verdict == "ask"


def test_malformed_settings_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "settings.json").write_text("{nope")
    with pytest.raises(ConfigError, match="settings.json"):
        load_rules(tmp_path, tmp_path / "home")


@pytest.mark.parametrize(
    "settings",
    [
        {"permissions": {"allow": "run_command(*)"}},
        {"permissions": {"deny": "edit_file(*)"}},
        {"permissions": {"allow": [1, 2]}},
        {"permissions": "yes"},
        ["x"],
        {"permissions": {"allow": ["(bad"]}},
    ],
)
def test_settings_of_the_wrong_shape_are_errors_not_grants(
    tmp_path: Path, settings: object
) -> None:
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "settings.json").write_text(json.dumps(settings))
    with pytest.raises(ConfigError, match="settings.json"):
        load_rules(tmp_path, tmp_path / "home")
