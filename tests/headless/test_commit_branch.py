"""`--commit-branch` names are checked as given, before the run (docs/ci.md: bad usage is exit
2). Before, `@{-1}` passed the check (git expanded it to the branch checked out before), the
agent ran, and the commit failed at the end with exit 1; `refs/heads/x` made a branch named
`refs/heads/refs/heads/x`, ambiguous with `x` for every later git command."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.headless.test_run_ci import FIX, kiln

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    "name",
    [
        "@{-1}", "refs/heads/fix", "HEAD", "-f", "a..b", "x.lock", "kiln/x.lock", "a@{b",
        # before, these were made: `@` is HEAD to git, `ORIG_HEAD` and the other pseudo-refs
        # and `tags/v1`, `heads/x`, `remotes/o/x` resolve to another ref before the branch, and
        # so does a tag's name (`v1`): `git checkout v1` took the tag, not the branch
        "@", "ORIG_HEAD", "FETCH_HEAD", "AUTO_MERGE", "heads/x", "tags/v1", "remotes/o/x", "v1",
        # `refs/stash` exists (a stash): git read `stash` as it, not as the branch made
        "stash",
    ],
)  # fmt: skip
def test_a_name_git_would_read_otherwise_is_refused_first(failing_repo: Path, name: str) -> None:
    subprocess.run(["git", "tag", "v1"], cwd=failing_repo, check=True)
    subprocess.run(["git", "branch", "earlier"], cwd=failing_repo, check=True)
    subprocess.run(["git", "checkout", "-q", "earlier"], cwd=failing_repo, check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=failing_repo, check=True)
    (failing_repo / "notes.txt").write_text("kept aside\n")
    subprocess.run(["git", "stash", "-q", "-u"], cwd=failing_repo, check=True)
    proc = kiln(failing_repo, FIX, "--ci", "--commit-branch", name, "fix")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"kiln: --commit-branch {name!r} is not a valid branch name"
    assert (failing_repo / "calc.py").read_text().count("a - b") == 1  # the run never started
    branches = subprocess.run(["git", "branch", "--format=%(refname)"], cwd=failing_repo,
                              capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert branches == ["refs/heads/earlier", "refs/heads/main"]


def test_a_plain_name_with_slashes_and_letters_is_made(failing_repo: Path) -> None:
    proc = kiln(failing_repo, FIX, "--ci", "--commit-branch", "kiln/naprawa-ąść", "fix")
    assert proc.returncode == 10, proc.stderr
    head = subprocess.run(["git", "symbolic-ref", "HEAD"], cwd=failing_repo,
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert head == "refs/heads/kiln/naprawa-ąść"


def branches(root: Path) -> list[str]:
    return subprocess.run(["git", "branch", "--format=%(refname:short)"], cwd=root,
                          capture_output=True, text=True, check=True).stdout.split()  # fmt: skip


@pytest.mark.parametrize("partial", [False, True])
def test_a_run_stopped_at_a_limit_makes_no_branch_unless_asked(
    failing_repo: Path, partial: bool
) -> None:
    """Before, a run that stopped at `--max-steps` (or `--max-minutes`, `--max-cost-usd`, a
    provider failure, a cancel) committed its half-done work on the branch, which the workflow
    then pushes like a finished one. Now the patch and summary hold it, and the branch is made
    only with `--commit-partial` (docs/ci.md)."""
    out = failing_repo.parent / "out"
    extra = ("--commit-partial",) if partial else ()
    proc = kiln(failing_repo, FIX, "--ci", "--commit-branch", "kiln/fix", "--max-steps", "3",
                "--artifacts", str(out), *extra, "fix")  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "return a + b" in (out / "changes.patch").read_text()
    summary = (out / "summary.md").read_text()
    if partial:
        assert "kiln/fix" in branches(failing_repo)
    else:
        assert branches(failing_repo) == ["main"]
        assert "no branch `kiln/fix`: the run stopped early (max_steps)" in summary, summary


@pytest.mark.parametrize(
    ("existing", "name", "why"),
    [
        ("kiln/fix", "kiln/fix/more", "branch 'kiln/fix' exists, and a branch cannot also be a folder of branches"),
        ("kiln/fix", "kiln", "branches 'kiln/…' exist (kiln/fix), and a folder of branches cannot also be a branch"),
        (None, "kiln/" + "x" * 300, "is not a valid branch name: its part 'xxxxxxxxxxxx…' is longer than 250 bytes"),
    ],
)  # fmt: skip
def test_a_name_that_cannot_be_made_beside_existing_branches_is_refused_first(
    failing_repo: Path, existing: str | None, name: str, why: str
) -> None:
    """git keeps branches as files: `kiln/fix/more` cannot be made where `kiln/fix` exists, nor
    `kiln` beside `kiln/fix`, nor a part longer than a file name may be. Each passed the check,
    the agent ran (its time and spend), and `git update-ref` failed at the end with exit 1."""
    if existing:
        subprocess.run(["git", "branch", existing], cwd=failing_repo, check=True)
    before = branches(failing_repo)
    proc = kiln(failing_repo, FIX, "--ci", "--commit-branch", name, "fix")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kiln: --commit-branch"), proc.stderr
    assert why in lines[0], lines[0]
    assert (failing_repo / "calc.py").read_text().count("a - b") == 1  # the run never started
    assert branches(failing_repo) == before


def test_a_secret_in_the_task_stays_out_of_the_commit_message(failing_repo: Path) -> None:
    """A build log given as the task can hold a token: the summary and report had it redacted,
    but the branch's commit message (pushed by the workflow) quoted the task as given."""
    secret = "s3cr3t-value-4f9a8b7c"
    task = f"fix it; the log said: auth failed for {secret}"
    proc = kiln(failing_repo, FIX, "--ci", "--commit-branch", "kiln/fix", task,
                env={"DEPLOY_TOKEN": secret})  # fmt: skip
    assert proc.returncode == 10, proc.stderr
    message = subprocess.run(["git", "log", "-1", "--format=%B", "kiln/fix"], cwd=failing_repo,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "Task: fix it; the log said: auth failed for [REDACTED:DEPLOY_TOKEN]" in message
    assert secret not in message
