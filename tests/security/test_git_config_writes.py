"""`git config KEY VALUE` writes a config file (docs/security.md section 3): the repository's
`.git/config`, `~/.gitconfig` with `--global`, F with `--file F`; `--unset` and the `set`
subcommand too. Before, only `--file F` was read, so without the sandbox (which keeps
`.git/config` read-only) yolo wrote past a user's `Write(…)` deny rule on either file, and ci
wrote the repository's config (a `core.fsmonitor` runs on the user's next `git status`). A read
(`--get`, `-l`, one key) writes nothing. Through the real `kiln run`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.permission_rules import Rules
from agent.permissions import Permissions
from agent.shell_parse import parse_command
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results


def repository(tmp_path: Path, kiln_home: Path, deny: list[str]) -> Path:
    root = tmp_path / "home" / "proj"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root.parent / ".gitconfig").write_text("[user]\n\tname = me\n")
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": {"deny": deny}}))
    return root


def run(root: Path, tmp_path: Path, kiln_home: Path, command: str, *extra: str) -> str:
    script = tmp_path / "script.json"
    call = {"name": "run_command", "input": {"command": command}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "done"]))
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="yolo",
                    output="stream-json", extra=extra)  # fmt: skip
    return " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))


@pytest.mark.parametrize(
    ("command", "rule", "file"),
    [
        ("git config core.fsmonitor 'touch x'", "Write(.git/config)", ".git/config"),
        ("git config --unset core.bare", "Write(.git/config)", ".git/config"),
        ("git config set core.fsmonitor 'touch x'", "Write(.git/**)", ".git/config"),
        ("git -c a.b=c config --add core.x y", "Write(.git/config)", ".git/config"),
        ("git config --global user.name other", "Write(~/.gitconfig)", "../.gitconfig"),
    ],
)
def test_git_config_meets_the_deny_rules_on_the_file_it_changes(
    tmp_path: Path, kiln_home: Path, command: str, rule: str, file: str
) -> None:
    root = repository(tmp_path, kiln_home, [rule])
    before = (root / file).read_text()
    results = run(root, tmp_path, kiln_home, command, "--no-sandbox")
    assert (root / file).read_text() == before, results
    assert f"denied by rule {rule}" in results, results


@pytest.mark.parametrize(
    ("command", "written"),
    [
        ("git config user.name x", [".git/config"]),
        ("git -C sub config user.name x", [".git/config", "sub/.git/config"]),
        ("git config --worktree core.x y", [".git/config.worktree"]),
        ("git config --system core.x y", ["/etc/gitconfig"]),
        ("git config --file=conf/x.ini --remove-section s", ["conf/x.ini"]),
        ("git config user.name", []),
        ("git config --get user.name", []),
        ("git config get user.name", []),
        ("git config -l", []),
        ("git config --file conf/x.ini --list", []),
        ("git config --global --get-regexp alias", []),
    ],
)
def test_what_git_config_writes(tmp_path: Path, command: str, written: list[str]) -> None:
    """A read writes nothing (before, `--file F --list` counted as a write of F); ci refuses
    a write of git's own config as of any repository config (an ordinary file it allows)."""
    assert parse_command(command).argument_writes(tmp_path) == written
    check = Permissions("ci", Rules(), root=tmp_path).check("run_command", {"command": command})
    refused = bool(written) and not written[0].startswith("conf/")
    assert check.verdict == ("deny" if refused else "allow"), check
