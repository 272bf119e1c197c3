"""What the index hides, through the real `kiln run --ci` (docs/security.md section 8): the
user's uncommitted edits survive a chain of git commands that each keep them (a commit of the
edit, then a reset, checkout or revert that leaves the file as `HEAD` has it, while the run
puts the moved refs back), and a change behind an `assume-unchanged` or `skip-worktree` bit is
in the patch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repos import git

pytestmark = pytest.mark.e2e

EDIT = "# the user's uncommitted work\n"
PUT_BACK = "Makefile lost the uncommitted edit it held before the run; put back"


def _workspace(repo: Path) -> None:
    (repo / "Makefile").write_text("test:\n\tpytest\n")
    git(repo, "add", "Makefile")
    git(repo, "commit", "-qm", "make")
    (repo / "Makefile").write_text("test:\n\tpytest\n" + EDIT)


def _run(repo: Path, *commands: str, verify: str = "") -> subprocess.CompletedProcess:
    script = repo.parent / "script.json"
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": c}}]} for c in commands]
    script.write_text(json.dumps([*steps, "Done."]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format",
         "json", "--artifacts", str(repo.parent / "out"), "tidy up",
         *(["--verify", verify] if verify else [])],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    "discard",
    ["git reset --keep HEAD~1", "git checkout -q HEAD~1", "git revert --no-edit HEAD",
     "git checkout -q -B main HEAD~1"],
)  # fmt: skip
def test_an_edit_committed_then_reset_away_is_put_back(failing_repo: Path, discard: str) -> None:
    """`git commit -qam wip` then `git reset --keep HEAD~1` left `Makefile` as `HEAD` has it
    and `main` where it was: the edit was in no file, patch or ref, and the run said "nothing to
    do" (exit 11). It is put back and named among the refusals."""
    _workspace(failing_repo)
    proc = _run(failing_repo, "git commit -qam wip", discard)
    assert proc.returncode == 5, proc.stderr
    report = json.loads(proc.stdout)
    assert PUT_BACK in [r["reason"] for r in report["refusals"]]
    assert (failing_repo / "Makefile").read_text().endswith(EDIT)
    assert report["files_changed"] == []  # the user's edit is not the run's change
    summary = (failing_repo.parent / "out" / "summary.md").read_text()
    assert PUT_BACK in summary


def test_the_agents_edit_of_an_edited_file_stays_the_agents(failing_repo: Path) -> None:
    """A file the user had edited and the agent edited further is the run's change, not put
    back: only a file left as `HEAD` has it is."""
    _workspace(failing_repo)
    proc = _run(failing_repo, "sed -i s/pytest/pytest-q/ Makefile")
    report = json.loads(proc.stdout)
    assert PUT_BACK not in [r["reason"] for r in report["refusals"]], proc.stderr
    assert (failing_repo / "Makefile").read_text() == "test:\n\tpytest-q\n" + EDIT
    assert [f["path"] for f in report["files_changed"]] == ["Makefile"]


def test_work_a_script_discards_is_put_back(failing_repo: Path) -> None:
    """The command check reads command lines, not the scripts they run: a script of the
    repository's that runs `git reset --hard` and `git clean -fd` threw away the edit and the
    untracked notes. Both are put back, each named among the refusals."""
    _workspace(failing_repo)
    (failing_repo / "notes").mkdir()
    (failing_repo / "notes" / "todo.txt").write_text("untracked notes\n")
    script = "printf 'git reset -q --hard\\ngit clean -qfd\\n' > setup.sh"
    proc = _run(failing_repo, script, "sh setup.sh")
    assert proc.returncode == 5, proc.stderr
    reasons = [r["reason"] for r in json.loads(proc.stdout)["refusals"]]
    assert PUT_BACK in reasons
    assert (
        "notes/todo.txt, uncommitted work before the run, was deleted during it; put back"
        in reasons
    )
    assert (failing_repo / "Makefile").read_text().endswith(EDIT)
    assert (failing_repo / "notes" / "todo.txt").read_text() == "untracked notes\n"


def test_work_the_verification_discards_is_put_back(failing_repo: Path) -> None:
    """`--verify` runs the repository's own code (its tests, its Makefile) before the agent
    starts: what it throws away is put back too, as it was kept before it ran."""
    _workspace(failing_repo)
    (failing_repo / "notes.txt").write_text("untracked notes\n")
    proc = _run(failing_repo, "ls", verify="git reset -q --hard && git clean -qf && false")
    assert proc.returncode == 5, proc.stderr
    assert (failing_repo / "Makefile").read_text().endswith(EDIT)
    assert (failing_repo / "notes.txt").read_text() == "untracked notes\n"


def test_an_untracked_file_committed_then_reset_away_is_put_back(failing_repo: Path) -> None:
    _workspace(failing_repo)
    (failing_repo / "notes.txt").write_text("untracked notes\n")
    proc = _run(failing_repo, "git add notes.txt", "git commit -qm n", "git reset --keep HEAD~1")
    assert proc.returncode == 5, proc.stderr
    assert (failing_repo / "notes.txt").read_text() == "untracked notes\n"
    assert json.loads(proc.stdout)["files_changed"] == []


def _ignored_log(repo: Path) -> None:
    """An ignored `local.log` of the user's, which an older commit on branch `old` tracked."""
    git(repo, "checkout", "-qb", "old")
    (repo / "local.log").write_text("the repository's log\n")
    git(repo, "add", "local.log")
    git(repo, "commit", "-qm", "old")
    git(repo, "checkout", "-q", "main")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore logs")
    (repo / "local.log").write_text("the user's log\n")


def test_an_ignored_file_a_checkout_removed_is_put_back(failing_repo: Path) -> None:
    """git overwrites an ignored file that the commit it checks out tracks, and removes it on the
    way back: `git checkout old`, then `git checkout main`, each of which keeps edits, deleted
    the user's ignored log (exit 11, nothing reported)."""
    _ignored_log(failing_repo)
    proc = _run(failing_repo, "git checkout -q old", "git checkout -q main")
    assert proc.returncode == 5, proc.stderr
    assert [r["reason"] for r in json.loads(proc.stdout)["refusals"]] == [
        "local.log, uncommitted work before the run, was deleted during it; put back"
    ]
    assert (failing_repo / "local.log").read_text() == "the user's log\n"


def test_an_ignored_file_the_run_rewrites_is_left_as_written(failing_repo: Path) -> None:
    """Build output and logs are ignored files the run rewrites: not put back."""
    _ignored_log(failing_repo)
    proc = _run(failing_repo, "echo fresh > local.log")
    assert proc.returncode == 11, proc.stderr
    assert json.loads(proc.stdout)["refusals"] == []
    assert (failing_repo / "local.log").read_text() == "fresh\n"


def test_nothing_is_put_back_through_a_link(failing_repo: Path) -> None:
    """A folder of kept files that the run turned into a link to a folder outside the
    workspace: Kiln, which writes outside the sandbox, writes nothing there."""
    outside = failing_repo.parent / "outside"
    outside.mkdir()
    (failing_repo / "notes").mkdir()
    (failing_repo / "notes" / "todo.txt").write_text("untracked notes\n")
    proc = _run(failing_repo, f"rm -r notes && ln -s {outside} notes")
    assert proc.returncode in (5, 10, 11), proc.stderr
    assert list(outside.iterdir()) == []
    assert (failing_repo / "notes").is_symlink()


@pytest.mark.parametrize(
    ("flag", "change", "added", "removed"),
    [("--assume-unchanged", "echo 'import os' >> calc.py", 1, 0),
     ("--skip-worktree", "echo 'import os' >> calc.py", 1, 0),
     ("--skip-worktree", "rm calc.py", 0, None)],
)  # fmt: skip
def test_a_change_behind_an_index_bit_is_in_the_patch(
    failing_repo: Path, flag: str, change: str, added: int, removed: int | None
) -> None:
    """`git update-index --assume-unchanged calc.py` (or `--skip-worktree`), then an edit of
    `calc.py`: `git status` looks away from the file, and so did the patch, the summary and the
    report, which said "nothing to do" (exit 11) while the checkout held the change."""
    proc = _run(failing_repo, f"git update-index {flag} calc.py", change)
    assert proc.returncode == 10, proc.stderr
    (changed,) = json.loads(proc.stdout)["files_changed"]
    assert changed["path"] == "calc.py" and changed["added"] == added
    assert removed is not None or changed["removed"] > 0
    patch = (failing_repo.parent / "out" / "changes.patch").read_text()
    assert patch.startswith("diff --git a/calc.py b/calc.py")
    summary = (failing_repo.parent / "out" / "summary.md").read_text()
    assert "### What changed" in summary and "calc.py" in summary


def test_a_sparse_checkouts_absent_files_are_no_deletion(failing_repo: Path) -> None:
    """Outside a sparse checkout's cone, a file is absent with its skip-worktree bit set: that
    is not a change of the run's."""
    (failing_repo / "docs").mkdir()
    (failing_repo / "pkg").mkdir()
    (failing_repo / "pkg" / "mod.py").write_text("x = 1\n")
    (failing_repo / "docs" / "a.md").write_text("a\n")
    git(failing_repo, "add", ".")
    git(failing_repo, "commit", "-qm", "more")
    git(failing_repo, "sparse-checkout", "set", "--cone", "docs")
    assert not (failing_repo / "pkg").exists()
    proc = _run(failing_repo, "ls")
    assert proc.returncode == 11, proc.stderr
    assert json.loads(proc.stdout)["files_changed"] == []


def _once_tracked_cfg(repo: Path, user_cfg: str | None) -> None:
    """`local.cfg` tracked by the first commit and ignored by `.gitignore` since the second,
    which untracked it (the user's own copy, `user_cfg`, is ignored)."""
    (repo / ".gitignore").write_text("local.cfg\n")
    (repo / "local.cfg").write_text("the repository's cfg\n")
    git(repo, "add", ".gitignore")
    git(repo, "add", "-f", "local.cfg")
    git(repo, "commit", "-qm", "cfg")
    (repo / "calc.py").write_text((repo / "calc.py").read_text() + "# untracked the cfg\n")
    git(repo, "rm", "-q", "--cached", "local.cfg")
    git(repo, "commit", "-qam", "untrack cfg")
    if user_cfg is None:
        (repo / "local.cfg").unlink()
    else:
        (repo / "local.cfg").write_text(user_cfg)


@pytest.mark.parametrize("user_cfg", ["the user's cfg\n", None])
def test_a_checkout_of_a_commit_tracking_an_ignored_file(
    failing_repo: Path, user_cfg: str | None
) -> None:
    """`git checkout HEAD~1` to a commit that tracks `local.cfg`, which the starting `HEAD`
    ignores: the file's name was among the changed ones, `git add` refused an ignored path, and
    the run ended with exit 1 ("git add failed"), no patch, and the user's ignored `local.cfg`
    overwritten. The patch holds the checkout's change (calc.py), never the ignored file, and
    the user's file is put back."""
    _once_tracked_cfg(failing_repo, user_cfg)
    proc = _run(failing_repo, "git checkout -q HEAD~1")
    assert proc.returncode == 10, proc.stderr
    report = json.loads(proc.stdout)
    assert report["error"] == ""
    assert [f["path"] for f in report["files_changed"]] == ["calc.py"]
    patch = (failing_repo.parent / "out" / "changes.patch").read_text()
    assert "local.cfg" not in patch and "-# untracked the cfg" in patch
    reasons = [r["reason"] for r in report["refusals"]]
    if user_cfg is None:
        assert reasons == []
    else:
        assert reasons == [
            "local.cfg, an ignored file before the run, was overwritten by a tracked one; put back"
        ]
        assert (failing_repo / "local.cfg").read_text() == user_cfg


@pytest.mark.parametrize("command", ["git update-index --force-remove Makefile",
                                     "git rm -q --cached Makefile"])  # fmt: skip
def test_a_file_the_index_dropped_is_no_edit(failing_repo: Path, command: str) -> None:
    """The user's edited `Makefile` taken out of the index, its content untouched: the run read
    a tracked file it could no longer find in the index as edited, and put the user's edit into
    the patch (and a `--commit-branch` branch) as its own change (exit 10)."""
    _workspace(failing_repo)
    proc = _run(failing_repo, command)
    assert proc.returncode == 11, proc.stderr
    assert json.loads(proc.stdout)["files_changed"] == []
    assert EDIT not in (failing_repo.parent / "out" / "changes.patch").read_text()
    assert (failing_repo / "Makefile").read_text().endswith(EDIT)
