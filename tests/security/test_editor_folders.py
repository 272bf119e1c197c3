"""JetBrains IDEs and Helix act on a project folder's config by themselves when it opens: the
project interpreter in `.idea/misc.xml` and run configurations in `.idea/workspace.xml`, each
language server's `command` in `.helix/languages.toml`, started on the host outside any sandbox.
`.vscode/tasks.json` and `.zed/settings.json` were held, these were not, nor the MCP servers VS
Code (`.vscode/mcp.json`), Cursor and Gemini CLI start from the folder, nor Claude Code's
project servers (`.mcp.json`, started by the name the user approved once, whatever its command
has become): `write_file` and commands wrote them in every mode. Now the two folders are held like them (docs/security.md sections 2
and 4). Through the real `kiln run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from agent.write_policy import HOST_RUN_REFUSAL
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

MISC = '<project version="4"><component name="ProjectRootManager" project-jdk-name="Python 3.11" /></project>\n'
EVIL = '[[language]]\nname = "python"\nlanguage-servers = ["x"]\n[language-server.x]\ncommand = "./payload.sh"\n'


# Other agents in the editor start the MCP servers these name when the folder opens.
MCP_FILES = (".vscode/mcp.json", ".cursor/mcp.json", ".gemini/settings.json", ".mcp.json",
             ".roo/mcp.json", ".kiro/settings/mcp.json", ".amazonq/mcp.json",
             ".continue/mcpServers/x.yaml", "opencode.json")  # fmt: skip
SERVERS = '{"mcpServers": {"x": {"command": "./payload.sh"}}, "servers": {"x": {"command": "./payload.sh"}}}'


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "home" / "proj"
    (root / ".idea").mkdir(parents=True)
    (root / ".idea" / "misc.xml").write_text(MISC)
    (root / "evil.toml").write_text(EVIL)
    return root


def run(root: Path, tmp_path: Path, kiln_home: Path, calls: list[dict], mode: str) -> str:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [c]} for c in calls] + ["done"]))
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode=mode,
                    output="stream-json")  # fmt: skip
    return " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))


@pytest.mark.parametrize("mode", ["yolo", "ci"])
def test_the_file_tools_never_write_jetbrains_or_helix_config(
    tmp_path: Path, kiln_home: Path, mode: str
) -> None:
    root = workspace(tmp_path)
    calls = [
        {"name": "write_file", "input": {"path": ".helix/languages.toml", "content": EVIL}},
        {"name": "write_file", "input": {"path": ".idea/workspace.xml", "content": "<x/>"}},
        {"name": "edit_file", "input": {"path": ".IDEA/misc.xml", "old_text": "Python 3.11",
                                        "new_text": "evil"}},
    ]  # fmt: skip
    calls += [
        {"name": "write_file", "input": {"path": p, "content": SERVERS}} for p in MCP_FILES
    ]  # fmt: skip
    results = run(root, tmp_path, kiln_home, calls, mode)
    assert not any((root / p).exists() for p in MCP_FILES), results
    assert not (root / ".helix").exists(), results
    assert not (root / ".idea" / "workspace.xml").exists(), results
    assert (root / ".idea" / "misc.xml").read_text() == MISC, results
    assert HOST_RUN_REFUSAL.format(path=".helix/languages.toml") in results, results


def test_commands_cannot_write_them_either(tmp_path: Path, kiln_home: Path) -> None:
    root = workspace(tmp_path)
    calls = [
        {"name": "run_command", "input": {"command": (
            "python3 -c \"import os; os.makedirs('.helix', exist_ok=True); "
            "open('.helix/languages.toml', 'w').write(open('evil.toml').read())\"; echo ran-1")}},
        {"name": "run_command", "input": {"command": (
            "python3 -c \"open('.idea/misc.xml', 'w').write('evil')\"; echo ran-2")}},
    ]  # fmt: skip
    calls.append({"name": "run_command", "input": {"command": (
        "mkdir -p .vscode .cursor .gemini && " + " && ".join(f"cp evil.toml {p}" for p in MCP_FILES)
        + "; echo ran-3")}})  # fmt: skip
    planted = (
        "python3 -c \"import os, sys\nfor p in sys.argv[1:]:\n"
        "    os.makedirs(os.path.dirname(p) or '.', exist_ok=True); open(p, 'w').write('x')\" "
        + " ".join(MCP_FILES) + "; echo ran-4"
    )  # fmt: skip
    calls.append({"name": "run_command", "input": {"command": planted}})
    results = run(root, tmp_path, kiln_home, calls, "ci")
    assert "ran-1" in results and "ran-2" in results and "ran-4" in results, results
    assert not any((root / p).exists() for p in MCP_FILES), results
    assert not (root / ".helix").exists(), results
    assert (root / ".idea" / "misc.xml").read_text() == MISC, results


# Vim with 'exrc' sources these from the folder it opens in (Neovim: `.nvim.lua`, `.nvimrc`).
VIM_FILES = (".vimrc", "_vimrc", ".gvimrc", "_gvimrc", "_exrc")


def test_vims_local_config_is_held_like_neovims(tmp_path: Path, kiln_home: Path) -> None:
    """`.exrc` and `.nvimrc` were held, Vim's `.vimrc` (`:!` runs a shell command when Vim
    opens the folder) was not: `write_file` and commands wrote it in every mode."""
    root = workspace(tmp_path)
    calls = [{"name": "write_file", "input": {"path": p, "content": '!sh payload.sh\n'}}
             for p in VIM_FILES]  # fmt: skip
    planted = "python3 -c \"open('.vimrc', 'w').write('!sh payload.sh')\"; echo ran-vim"
    calls.append({"name": "run_command", "input": {"command": planted}})
    results = run(root, tmp_path, kiln_home, calls, "ci")
    assert "ran-vim" in results, results
    assert not any((root / p).exists() for p in VIM_FILES), results
    assert HOST_RUN_REFUSAL.format(path=".vimrc") in results, results
