"""`sandbox.hide` entries (and paths a `Read` deny rule hides) that are, or pass through, a link
or a folder a command can move, through the real `kiln run` and bubblewrap:

- a project's entry that is a link to `..` covered the folder holding the workspace: every
  command ran in an empty folder and what it wrote was lost;
- a hidden file under a folder the sandbox pins for its own files (`.vscode`, for
  `.vscode/settings.json`) was bound again with that folder, and read (`.vscode/sftp.json`, where
  an SFTP extension keeps a password);
- a hidden link naming an absolute path (`.env -> /srv/app/.env.prod`) stopped every command
  ("Can't create file at …/.env"), and once a command turned it elsewhere the next one would
  have read `.env.prod`, no longer covered;
- a command renamed the folder of a hidden file (`mv cfg cfg2`), and the next read it there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run_json, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

SECRET = "kiln-hidden-secret-7f3a"


def _run(ws: Path, commands: list[str], host_dir: Path, kiln_home: Path) -> str:
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": c}}]} for c in commands]
    _, out = kiln_run_json(
        ws, steps, home=host_dir / "home", kiln_home=kiln_home, script=host_dir / "script.json"
    )
    return json.dumps(tool_results(Path(out["transcript"])))


def _workspace(host_dir: Path) -> Path:
    ws = host_dir / "ws"
    ws.mkdir()
    (host_dir / "home").mkdir()
    (ws / "code.py").write_text("print('workspace file')\n")
    return ws


def _hide(kiln_home: Path, *paths: Path) -> None:
    (kiln_home / "settings.json").write_text(
        json.dumps({"sandbox": {"hide": [str(p) for p in paths]}})
    )


def test_a_project_hide_entry_linked_to_the_parent_leaves_the_workspace(
    host_dir: Path, kiln_home: Path
) -> None:
    ws = _workspace(host_dir)
    (ws / "up").symlink_to("..")
    (ws / ".kiln").mkdir()
    (ws / ".kiln" / "settings.json").write_text(json.dumps({"sandbox": {"hide": [str(ws / "up")]}}))
    results = _run(ws, ["cat code.py && echo made > made.txt"], host_dir, kiln_home)
    assert "workspace file" in results, results
    assert (ws / "made.txt").read_text() == "made\n"


def test_a_hidden_file_under_a_pinned_folder_stays_hidden(host_dir: Path, kiln_home: Path) -> None:
    ws = _workspace(host_dir)
    (ws / ".vscode").mkdir()
    (ws / ".vscode" / "settings.json").write_text("{}")
    (ws / ".vscode" / "sftp.json").write_text(SECRET)
    _hide(kiln_home, ws / ".vscode" / "sftp.json")
    results = _run(ws, ["cat .vscode/sftp.json; echo done-$((6*7))"], host_dir, kiln_home)
    assert "done-42" in results, results
    assert SECRET not in results


def test_a_hidden_link_turned_elsewhere_keeps_its_first_target_hidden(
    host_dir: Path, kiln_home: Path
) -> None:
    ws = _workspace(host_dir)
    (host_dir / "outside").mkdir()
    real = host_dir / "outside" / ".env.prod"
    real.write_text(SECRET)
    (ws / ".env").symlink_to(real)
    _hide(kiln_home, ws / ".env")
    results = _run(
        ws, ["rm .env && ln -s /nonexistent .env && echo turned-$((6*7))", f"cat {real}; echo done-$((6*7))"],
        host_dir, kiln_home,
    )  # fmt: skip
    assert "turned-42" in results and "done-42" in results, results
    assert SECRET not in results


def test_the_folder_of_a_hidden_file_cannot_be_moved_away(host_dir: Path, kiln_home: Path) -> None:
    ws = _workspace(host_dir)
    (ws / "cfg").mkdir()
    (ws / "cfg" / "key").write_text(SECRET)
    _hide(kiln_home, ws / "cfg" / "key")
    results = _run(
        ws, ["mv cfg cfg2", "cat cfg2/key cfg/key; echo done-$((6*7))"], host_dir, kiln_home
    )
    assert "done-42" in results, results
    assert SECRET not in results
    assert (ws / "cfg" / "key").read_text() == SECRET


def test_a_relative_hide_entry_is_the_workspaces_wherever_kiln_starts(
    host_dir: Path, kiln_home: Path
) -> None:
    """A project's `"hide": [".env"]` was resolved against the folder Kiln was started in, not
    the workspace: an editor starts `kiln lsp` in a folder of its own, and `kiln run --root ws`
    from elsewhere hid `./.env` there while the workspace's `.env` was read."""
    import os
    import subprocess
    import sys

    ws = _workspace(host_dir)
    (ws / ".env").write_text(SECRET)
    (ws / ".kiln").mkdir()
    (ws / ".kiln" / "settings.json").write_text(json.dumps({"sandbox": {"hide": [".env"]}}))
    elsewhere = host_dir / "elsewhere"
    elsewhere.mkdir()
    script = host_dir / "script.json"
    step = {"tool_calls": [{"name": "run_command", "input": {"command": "cat .env; echo ran"}}]}
    script.write_text(json.dumps([step, "done"]))
    env = {**os.environ, "HOME": str(host_dir / "home"), "KILN_HOME": str(kiln_home),
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--root", str(ws), "--mode", "yolo",
         "--output-format", "json", "go"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    results = json.dumps(tool_results(Path(json.loads(proc.stdout)["transcript"])))
    assert "ran" in results, (results, proc.stderr)
    assert SECRET not in results


def test_a_hide_entry_holding_the_workspace_is_said(host_dir: Path, kiln_home: Path) -> None:
    """Such an entry is left uncovered (above); the user who wrote it hears that it hides
    nothing, as for a settings key Kiln does not read."""
    from tests.security.scripted_run import kiln_run

    ws = _workspace(host_dir)
    (ws / "up").symlink_to("..")
    (ws / ".kiln").mkdir()
    hide = {"sandbox": {"hide": ["up", ".", "code.py"]}}
    (ws / ".kiln" / "settings.json").write_text(json.dumps(hide))
    script = host_dir / "script.json"
    script.write_text(json.dumps(["done"]))
    proc = kiln_run(ws, home=host_dir / "home", kiln_home=kiln_home, script=script, output="text")
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "sandbox.hide" in line]
    assert said == [
        ".kiln/settings.json: sandbox.hide up is or holds the workspace, so it is not hidden "
        "from commands",
        ".kiln/settings.json: sandbox.hide . is or holds the workspace, so it is not hidden "
        "from commands",
    ], proc.stderr
