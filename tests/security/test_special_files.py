"""A FIFO the agent made (`mkfifo` is an ordinary command, allowed in `ci`) must not hang the
host: opening it for reading would block the Kiln process forever, and the run with it. Through
the real `kiln run --ci` with bubblewrap: the command makes the FIFO, then the file tools read,
search and edit it, and the run ends."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import git
from tests.security.scripted_run import kiln_run, tool_results

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


def _repository_with_shared_config(tmp_path: Path) -> Path:
    """A repository whose `.git/config` includes a tracked file (`include.path =
    ../shared.gitconfig`, a common way to share settings)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "shared.gitconfig").write_text("[core]\n\tautocrlf = false\n")
    git(root, "config", "include.path", "../shared.gitconfig")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return root


def test_a_command_cannot_swap_a_config_include_for_a_fifo(tmp_path: Path, kiln_home: Path) -> None:
    """A FIFO in place of the included file would hold every host git call of `kiln run --ci`
    (600 s each). The file is part of git's config, so it is read-only to commands
    (`agent/sandbox/git_includes.py`): the swap fails and the run ends as usual."""
    root = _repository_with_shared_config(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        step("run_command", command="rm -f shared.gitconfig; mkfifo shared.gitconfig"),
        "done",
    ]))  # fmt: skip
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci", extra=("--ci",),
        timeout=200,
    )  # fmt: skip
    shared = root / "shared.gitconfig"
    assert shared.is_file() and not shared.is_fifo()
    assert shared.read_text() == "[core]\n\tautocrlf = false\n"
    assert "could not read the git config" not in proc.stderr, proc.stderr


def test_a_config_include_that_is_a_fifo_stops_kilns_git_quickly(
    tmp_path: Path, kiln_home: Path
) -> None:
    """The same FIFO already in place when Kiln starts (put there by another tool, or by an
    archive the user unpacked): Kiln reads the configs first under a 20 s bound and stops with
    one line, instead of waiting on the FIFO at every git call."""
    root = _repository_with_shared_config(tmp_path)
    (root / "shared.gitconfig").unlink()
    os.mkfifo(root / "shared.gitconfig")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci", extra=("--ci",),
        timeout=200,
    )  # fmt: skip
    assert (root / "shared.gitconfig").is_fifo()
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "could not read the git config" in proc.stderr and "FIFO" in proc.stderr, proc.stderr


def test_file_tools_and_skill_files_refuse_fifos_and_files_over_64_mb(
    tmp_path: Path, kiln_home: Path
) -> None:
    """docs/security.md section 2: the file tools and `skill{file}` read only regular files of
    at most 64 MB. A repository skill bundles a FIFO (reading it would block Kiln forever) and a
    sparse file one byte over 64 MB (read whole into memory); the workspace holds another."""
    root = tmp_path / "repo"
    skill = root / ".kiln" / "skills" / "notes"
    skill.mkdir(parents=True)
    git(root, "init", "-q")
    (skill / "SKILL.md").write_text("---\nname: notes\ndescription: Notes.\n---\nRead ref.md.\n")
    (skill / "ref.md").write_text("reference text\n")
    os.mkfifo(skill / "pipe.md")
    over = 64 * 2**20 + 1
    for big in (skill / "big.md", root / "big.txt"):
        with big.open("wb") as fh:
            fh.truncate(over)  # sparse: no disk space used
    (root / "at-limit.txt").write_bytes(b"x" * 10)
    with (root / "at-limit.txt").open("r+b") as fh:
        fh.truncate(over - 1)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        step("skill", name="notes", file="pipe.md"),
        step("skill", name="notes", file="big.md"),
        step("skill", name="notes", file="ref.md"),
        step("read_file", path="big.txt"),
        step("read_file", path="at-limit.txt", limit=1),
        "done",
    ]))  # fmt: skip
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, timeout=180)
    result = json.loads(proc.stdout)
    assert result["stop_reason"] == "end_turn", result
    pipe, skill_big, ref, big, at_limit = tool_results(Path(result["transcript"]))
    assert pipe.startswith("error:") and "pipe.md" in pipe, pipe
    assert "cannot read big.md: larger than 64 MB" in skill_big, skill_big
    assert "reference text" in ref, ref
    assert "cannot read big.txt: larger than 64 MB" in big, big
    assert "is a binary file" in at_limit, at_limit  # 64 MB exactly is read (and is NULs)
