"""A FIFO the agent made (`mkfifo` is an ordinary command, allowed in `ci`) must not hang the
host: opening it for reading would block the Kiln process forever, and the run with it. Through
the real `kiln run --ci` with bubblewrap: the command makes the FIFO, then the file tools read,
search and edit it, and the run ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import git
from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def step(tool: str, **args: object) -> dict[str, object]:
    return {"tool_calls": [{"name": tool, "input": args}]}


def test_file_tools_on_a_fifo_do_not_hang_the_run(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("needle\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        step("run_command", command="mkfifo pipe.txt"),
        step("read_file", path="pipe.txt"),
        step("grep", pattern="needle"),
        step("edit_file", path="pipe.txt", old_text="a", new_text="b"),
        "done",
    ]))  # fmt: skip
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci", extra=("--ci",)
    )
    result = json.loads(proc.stdout)
    assert result["stop_reason"] == "end_turn", result
    transcript = Path(result["transcript"]).read_text()
    assert "not a regular file" in transcript
    assert "a.txt:1" in transcript  # grep went on past the FIFO


def test_a_config_include_swapped_for_a_fifo_stops_kilns_git_quickly(
    tmp_path: Path, kiln_home: Path
) -> None:
    """A repository whose `.git/config` includes a tracked file (`include.path =
    ../shared.gitconfig`, a common way to share settings): a command swaps the file for a FIFO,
    and every host git call of `kiln run --ci` would wait on it at start-up, for 600 s each.
    Kiln reads the configs first under a 20 s bound and stops with one line."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "shared.gitconfig").write_text("[core]\n\tautocrlf = false\n")
    git(root, "config", "include.path", "../shared.gitconfig")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        step("run_command", command="rm shared.gitconfig && mkfifo shared.gitconfig"),
        "done",
    ]))  # fmt: skip
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci", extra=("--ci",),
        timeout=200,
    )  # fmt: skip
    assert (root / "shared.gitconfig").is_fifo()  # the attack ran
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "could not read the git config" in proc.stderr and "FIFO" in proc.stderr, proc.stderr
