"""Shell-aware rules and the one write policy, checked on the permission engine with the real
tree-sitter-bash parser: the cases from the issue (README's own allow rule, deny rules dodged
by chaining or another writing tool), the operators and wrappers, aliases, not-understood lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.permission_rules import Rules
from agent.permissions import Permissions
from agent.shell_parse import parse_command


def perms(tmp_path: Path, mode: str = "ask", **rules: list[str]) -> Permissions:
    return Permissions(mode, Rules(**rules), root=tmp_path)


def verdict(p: Permissions, command: str) -> str:
    return p.check("run_command", {"command": command}).verdict


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("pytest --version && touch X", ["pytest", "touch"]),
        ("pytest; touch X", ["pytest", "touch"]),
        ("pytest || touch X", ["pytest", "touch"]),
        ("pytest | tee out", ["pytest", "tee"]),
        ("pytest $(touch X)", ["touch", "pytest"]),
        ("pytest `touch X`", ["touch", "pytest"]),
        ("(cd a && touch X)", ["cd", "touch"]),
        ("{ pytest; touch X; }", ["pytest", "touch"]),
        ("diff <(touch X) b", ["touch", "diff"]),
        ("pytest & touch X", ["pytest", "touch"]),
        ("if pytest; then touch X; fi", ["pytest", "touch"]),
        ("for f in a; do touch a; done", ["touch"]),
        ("env A=1 sh -c 'touch X'", ["env", "sh", "touch"]),
        ('bash -c "pytest && touch X"', ["bash", "pytest", "touch"]),
        ("timeout 5 nohup touch X", ["timeout", "nohup", "touch"]),
        ("nice -n 5 xargs touch < list", ["nice", "xargs", "touch"]),
        ("FOO=$(touch X) pytest", ["touch", "pytest"]),
        ("cat <<EOF > f\n$(touch X)\nEOF", ["touch", "cat"]),
        ("while pytest; do touch X; done", ["pytest", "touch"]),
        ("command exec touch X", ["command", "exec", "touch"]),
        ("time stdbuf -o0 touch X", ["time", "stdbuf", "touch"]),
        ("sudo -u bob setsid touch X", ["sudo", "setsid", "touch"]),
    ],
)
def test_every_simple_command_is_found(line: str, names: list[str]) -> None:
    parsed = parse_command(line)
    assert parsed.understood, parsed.opaque
    assert [c.name for c in parsed.commands] == names


@pytest.mark.parametrize(
    "line",
    ["$CMD x", "eval 'touch X'", "echo touch X | sh", "bash", "f() { touch X; }; f",
     "echo x > \"$OUT\"", "pytest (", "sh -c \"$SCRIPT\""],
)  # fmt: skip
def test_lines_the_parser_cannot_vouch_for_ask_and_are_refused_in_ci(
    tmp_path: Path, line: str
) -> None:
    assert not parse_command(line).understood
    p = perms(tmp_path, allow=["Bash"])  # even a rule allowing every command does not approve it
    assert verdict(p, line) == "ask"
    assert verdict(perms(tmp_path, "ci"), line) == "deny"


@pytest.mark.parametrize("mode", ["ask", "ci"])
def test_readme_allow_rule_approves_only_whole_lines(tmp_path: Path, mode: str) -> None:
    p = perms(tmp_path, mode, allow=["run_command(pytest*)", "run_command(echo*)"])
    assert verdict(p, "pytest -q tests/") == "allow"
    assert verdict(p, "pytest -q && echo done") == "allow"
    if mode == "ask":
        for line in ("pytest --version && touch X", "pytest; touch X", "pytest $(touch X)",
                     "echo `touch X`", "echo hi | sh", "pytest > report.txt"):  # fmt: skip
            assert verdict(p, line) == "ask", line


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "ci", "yolo"])
def test_deny_rules_match_any_part_and_every_writing_tool(tmp_path: Path, mode: str) -> None:
    p = perms(tmp_path, mode, deny=["edit_file(secrets/**)", "run_command(rm *)"])
    for line in ("true && rm -rf build", "bash -c 'rm -rf build'", "echo $(rm x)",
                 "xargs rm < list", "echo x > secrets/key.txt", "echo x | tee secrets/key.txt",
                 "cat a >> secrets/sub/b", "pytest &> secrets/log", "pytest >| secrets/log",
                 "sudo setsid stdbuf -o0 rm x", "time exec rm x"):  # fmt: skip
        assert verdict(p, line) == "deny", line
    for tool, args in (
        ("write_file", {"path": "secrets/key.txt", "content": "x"}),
        ("edit_file", {"path": "secrets/key.txt", "old_text": "a", "new_text": "b"}),
        ("some_mcp_tool", {"path": "secrets/key.txt"}),
    ):
        assert p.check(tool, args).verdict == "deny", tool
    assert p.check("write_file", {"path": "src/a.py", "content": "x"}).verdict != "deny"


def test_claude_code_spellings_are_aliases(tmp_path: Path) -> None:
    p = perms(
        tmp_path,
        allow=["Bash(npm run test:*)", "Edit(docs/**)"],
        deny=["Write(.env)", "Read(private/**)", "Bash(git push:*)"],
    )
    assert verdict(p, "npm run test") == "allow"
    assert verdict(p, "npm run test -- --watch") == "allow"
    assert verdict(p, "npm run testing") == "ask"
    assert p.check("write_file", {"path": "docs/a.md", "content": "x"}).verdict == "allow"
    assert p.check("edit_file", {"path": ".env"}).verdict == "deny"
    assert verdict(p, "echo X=1 > .env") == "deny"
    assert p.check("read_file", {"path": "private/notes.txt"}).verdict == "deny"
    assert p.check("grep", {"pattern": "x", "path": "private"}).verdict == "deny"
    assert verdict(p, "make && git push origin main") == "deny"


def test_remember_and_settings_are_writes(tmp_path: Path) -> None:
    p = perms(tmp_path, "auto-edit", deny=["Edit(KILN.md)"])
    assert p.check("remember", {"text": "x"}).verdict == "deny"
    q = perms(tmp_path, "auto-edit")
    assert q.check("write_file", {"path": ".kiln/settings.json"}).verdict == "ask"
    assert verdict(q, "echo '{}' > .kiln/settings.json") == "ask"
    assert verdict(q, "echo x > .git/hooks/pre-commit") == "ask"
    assert verdict(perms(tmp_path, "ci"), "echo '{}' > .kiln/settings.json") == "deny"


def test_writes_outside_the_workspace_are_never_approved_by_a_rule(tmp_path: Path) -> None:
    p = perms(tmp_path, allow=["Bash(echo*)"])
    assert verdict(p, "echo x > /etc/motd") == "ask"
    assert verdict(p, "echo x > /var/tmp/sibling.txt") == "ask"
    assert verdict(p, "echo x > /dev/null") == "allow"
    assert verdict(p, "echo x > /tmp/scratch.log") == "allow"
    (tmp_path / "link").symlink_to("/etc")
    assert verdict(p, "echo x > link/motd") == "ask"
    assert verdict(perms(tmp_path, "ci"), "echo x > link/motd") == "deny"


def test_network_is_asked_and_a_yes_grants_it_once_or_always(tmp_path: Path) -> None:
    p = perms(tmp_path, allow=["Bash"])
    check = p.check("run_command", {"command": "make && curl -s https://example.com"})
    assert (check.verdict, check.network) == ("ask", True)
    assert "with" not in check.parts and "curl -s https://example.com" in check.parts
    p.remember_answer(
        "run_command", {"command": "make && curl -s https://example.com"}, "allow_always", check
    )
    again = p.check("run_command", {"command": "curl -s https://example.com"})
    assert (again.verdict, again.network) == ("allow", True)
    yolo = perms(tmp_path, "yolo").check("run_command", {"command": "curl https://example.com"})
    assert (yolo.verdict, yolo.network) == (
        "allow",
        False,
    )  # allowed, but the sandbox keeps it offline
    assert verdict(perms(tmp_path, "ci"), "git push origin main") == "deny"
    assert verdict(perms(tmp_path, "ci"), "python -m pip install requests") == "deny"


def test_external_flag_only_for_what_injected_text_would_want(tmp_path: Path) -> None:
    p = perms(tmp_path, "auto-edit", allow=["Bash(pytest*)"])
    plain = {"from_external": True}
    assert not p.check("write_file", {"path": "src/a.py"}, **plain).external
    assert not p.check("run_command", {"command": "pytest -q"}, **plain).external
    assert p.check("run_command", {"command": "pytest -q && make"}, **plain).external
    assert p.check("run_command", {"command": "curl x.io"}, **plain).external
    assert p.check("write_file", {"path": "AGENTS.md"}, **plain).external
    assert p.check("remember", {"text": "x"}, **plain).external
    assert not p.check("remember", {"text": "x"}).external


async def test_a_write_rule_on_the_project_memory_file_covers_remember(tmp_path: Path) -> None:
    """remember appends to the project's memory file, whichever it is (here AGENTS.md)."""
    from agent.providers.scripted import ScriptedModel
    from agent.session import AgentConfig, DiskHost, Session

    (tmp_path / "AGENTS.md").write_text("# Agents\n")
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "settings.json").write_text(
        '{"permissions": {"deny": ["Edit(AGENTS.md)"]}}'
    )
    model = ScriptedModel([{"tool_calls": [{"name": "remember", "input": {"text": "x"}}]}, "done"])
    session = Session.create(
        tmp_path, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model
    )
    await session.prompt("go")
    assert (tmp_path / "AGENTS.md").read_text() == "# Agents\n"
    assert "denied by rule Edit(AGENTS.md)" in session.turn.refusals[0]["reason"]


async def test_network_granted_in_the_user_settings_is_granted_in_ci(
    tmp_path: Path, kiln_home: Path
) -> None:
    """`sandbox.network_commands` in $KILN_HOME/settings.json lets that command reach the network
    in ci (asked for nowhere else); the same key in the project file does nothing."""
    from agent.providers.scripted import ScriptedModel
    from agent.session import AgentConfig, DiskHost, Session

    (kiln_home / "settings.json").write_text(
        '{"sandbox": {"network_commands": ["pip download *"]}}'
    )
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "settings.json").write_text(
        '{"sandbox": {"network_commands": ["curl *"]}}'
    )
    session = Session.create(
        tmp_path, host=DiskHost(), config=AgentConfig(mode="ci"), model=ScriptedModel(["x"])
    )
    pip = session.permissions.check("run_command", {"command": "pip download requests"})
    assert (pip.verdict, pip.network) == ("allow", True)
    assert (
        session.permissions.check("run_command", {"command": "curl https://x.io"}).verdict == "deny"
    )
    await session.aclose()


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "ci", "yolo"])
def test_deny_and_ask_rules_match_a_command_spelled_by_its_path(tmp_path: Path, mode: str) -> None:
    """`/usr/bin/curl` is curl: a deny or ask rule on the name holds for any path to it (before,
    `Bash(curl *)` let `/usr/bin/curl x` run). An allow rule still needs the name as written:
    `./git` in the workspace is not the git the user allowed."""
    p = perms(tmp_path, mode, deny=["Bash(curl *)", "Bash(rm:*)"], ask=["Bash(git push:*)"],
              allow=["Bash(git status)"])  # fmt: skip
    for line in ("/usr/bin/curl x", "./curl x", "env /usr/bin/curl x", "true && /bin/rm -f a",
                 "sh -c '/usr/bin/curl x'"):  # fmt: skip
        assert verdict(p, line) == "deny", line
    assert verdict(p, "git status") == "allow"
    if mode in ("ask", "auto-edit"):  # yolo asks nothing; ci refuses git push as network
        assert verdict(p, "/usr/bin/git push origin") == "ask"
        assert verdict(p, "./git status") == "ask"
