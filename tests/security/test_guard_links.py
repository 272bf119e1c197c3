"""The clean-up after a command (docs/security.md section 4, "removed when the command ends")
runs on the host, outside the sandbox: it must never follow a link the command made. A command
that links ``.kiln`` to ``$KILN_HOME`` or ``.vscode`` to the user's editor settings made the
guarded names appear, and the clean-up then deleted the user's own settings and installed skills.
Through the real `kiln run` in `yolo`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run_json, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def test_the_clean_up_removes_the_link_never_what_it_points_at(
    tmp_path: Path, host_dir: Path
) -> None:
    kiln_home = host_dir / "kiln_home"
    (kiln_home / "skills" / "mine").mkdir(parents=True)
    (kiln_home / "skills" / "mine" / "SKILL.md").write_text(
        "---\nname: mine\ndescription: x\n---\n"
    )
    (kiln_home / "settings.json").write_text('{"permissions": {"allow": ["Bash(pytest *)"]}}\n')
    editor = host_dir / "Code" / "User"
    editor.mkdir(parents=True)
    (editor / "settings.json").write_text('{"editor.fontSize": 14}\n')
    root = tmp_path / "repo"
    root.mkdir()
    links = f"ln -s {kiln_home} .kiln && ln -s {editor} .vscode && ln -s {editor} .zed"
    step = {"tool_calls": [{"name": "run_command", "input": {"command": links}}]}
    _, out = kiln_run_json(
        root, [step], home=host_dir, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    result = json.dumps(tool_results(Path(out["transcript"])))
    assert "exit code 0" in result
    assert (kiln_home / "settings.json").is_file()
    assert (kiln_home / "skills" / "mine" / "SKILL.md").is_file()
    assert (editor / "settings.json").read_text() == '{"editor.fontSize": 14}\n'
    assert not (root / ".kiln").is_symlink() and not (root / ".vscode").is_symlink()
    assert "removed .kiln" in result  # the link itself went, and the output says so
