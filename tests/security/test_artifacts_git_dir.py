"""`kiln run --ci --artifacts DIR` with DIR in a git directory (`.git/hooks`, `.git`, `.git/x`):
the run wrote its patch, summary, report and transcript among git's own hooks and config. Such a
folder is refused before the run, one line and exit 2, nothing made: a folder named `.git` on its
real path (a nested repository's, one reached through a link outside the workspace), or the
checkout's git directory or common directory wherever a `.git` file names them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.repos import committing_repo, git
from tests.security.scripted_run import kiln_run

OUTPUTS = {"changes.patch", "summary.md", "report.json", "transcript.jsonl"}


def repository(path: Path) -> Path:
    committing_repo(path)("init", {"calc.py": "def add(a, b):\n    return a - b\n"})
    return path


def run_ci(root: Path, tmp_path: Path, kiln_home: Path, artifacts: str):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "Nothing to do."}]))
    return kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
        extra=("--ci", "--artifacts", artifacts),
    )  # fmt: skip


def refused(proc, inside: Path) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kiln: --artifacts "), proc.stderr
    assert f" is inside the git directory {inside}; refused: " in lines[0], proc.stderr
    assert json.loads(proc.stdout)["stop_reason"] == "not_started"


def written(folder: Path) -> set[str]:
    return {p.name for p in folder.rglob("*")} & OUTPUTS


def all_names(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize("artifacts", [".git/hooks", ".git", ".git/x", ".git/x/y", "sub/../.git"])
def test_the_checkouts_git_folder_is_refused(
    tmp_path: Path, kiln_home: Path, artifacts: str
) -> None:
    root = repository(tmp_path / "repo")
    before = all_names(root / ".git")
    refused(run_ci(root, tmp_path, kiln_home, artifacts), (root / ".git").resolve())
    assert all_names(root / ".git") == before, "Kiln made or wrote something in .git"


def test_a_nested_repositorys_git_folder_is_refused(tmp_path: Path, kiln_home: Path) -> None:
    root = repository(tmp_path / "repo")
    repository(root / "vendor" / "lib")
    proc = run_ci(root, tmp_path, kiln_home, "vendor/lib/.git/hooks")
    refused(proc, (root / "vendor" / "lib" / ".git").resolve())
    assert written(root / "vendor") == set()


def test_a_link_outside_the_workspace_into_git_is_refused(tmp_path: Path, kiln_home: Path) -> None:
    """The runner's own alias is followed, as ever; where it leads is what is checked."""
    root = repository(tmp_path / "repo")
    (tmp_path / "alias").symlink_to(root / ".git")
    refused(run_ci(root, tmp_path, kiln_home, str(tmp_path / "alias" / "hooks")),
            (root / ".git").resolve())  # fmt: skip
    assert written(root / ".git") == set()


def test_a_worktrees_git_dir_and_common_dir_are_refused(tmp_path: Path, kiln_home: Path) -> None:
    """In a worktree `.git` is a file naming its git dir; the hooks and config are in the
    common dir, the main checkout's `.git`."""
    main = repository(tmp_path / "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    wt = tmp_path / "wt"
    common = (main / ".git").resolve()
    assert (wt / ".git").is_file()
    cases = {".git": wt.resolve() / ".git", str(common / "hooks"): common,
             str(common / "worktrees" / "wt" / "x"): common}  # fmt: skip
    for artifacts, inside in cases.items():
        refused(run_ci(wt, tmp_path, kiln_home, artifacts), inside)
    assert written(common) == set() and (wt / ".git").is_file()


def test_a_separate_git_dir_is_refused(tmp_path: Path, kiln_home: Path) -> None:
    """`git init --separate-git-dir`: the git directory has no `.git` in its name."""
    gitdir = tmp_path / "store"
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main", f"--separate-git-dir={gitdir}")
    git(root, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "--allow-empty",
        "-m", "init")  # fmt: skip
    before = all_names(gitdir)
    for artifacts in (str(gitdir), str(gitdir / "hooks"), str(gitdir / "new" / "out")):
        refused(run_ci(root, tmp_path, kiln_home, artifacts), gitdir.resolve())
    assert all_names(gitdir) == before


def test_a_folder_beside_git_is_still_written(tmp_path: Path, kiln_home: Path) -> None:
    """Only git's folders are refused: `.github/kiln` or `.gitout` are folders like any."""
    root = repository(tmp_path / "repo")
    for artifacts in (".github/kiln", ".gitout"):
        proc = run_ci(root, tmp_path, kiln_home, artifacts)
        assert proc.returncode == 11, proc.stderr
        assert written(root / artifacts) == OUTPUTS
