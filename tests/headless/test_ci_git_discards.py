"""git forms that throw away the user's uncommitted work, through the real `kiln run --ci`
(docs/security.md section 5, docs/ci.md): refused, listed in the report and the summary, and
the work left as it was; the forms that keep it still run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repos import git

pytestmark = pytest.mark.e2e

REFUSED = "destructive commands are not allowed in ci mode"
EDIT = "# the user's uncommitted work\n"


def _workspace(repo: Path) -> None:
    """A tracked `Makefile` (a file with no extension) edited, an untracked note and an ignored
    log: the user's work a command could throw away."""
    (repo / "Makefile").write_text("test:\n\tpytest\n")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", "Makefile", ".gitignore")
    git(repo, "commit", "-qm", "make")
    (repo / "Makefile").write_text("test:\n\tpytest\n" + EDIT)
    (repo / "notes.txt").write_text("untracked notes\n")
    (repo / "local.log").write_text("ignored log\n")


def _work_is_intact(repo: Path) -> None:
    assert (repo / "Makefile").read_text().endswith(EDIT)
    assert (repo / "notes.txt").read_text() == "untracked notes\n"
    assert (repo / "local.log").read_text() == "ignored log\n"


def _run(repo: Path, command: str, **extra: str) -> subprocess.CompletedProcess:
    script = repo.parent / "script.json"
    step = {"tool_calls": [{"name": "run_command", "input": {"command": command}}]}
    script.write_text(json.dumps([step, "Done."]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script), **extra}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format",
         "json", "--artifacts", str(repo.parent / "out"), "tidy up"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


DISCARDING = [
    ("git checkout Makefile", False),  # no branch of that name: git takes it for a path
    ("git checkout -q Makefile", False),
    ("git checkout .", False),
    ("git checkout HEAD -- Makefile", False),
    ("git checkout HEAD Makefile", False),
    ("git checkout-index -f Makefile", False),
    ("git checkout-index -af", False),
    ("git checkout-index --all --force", False),
    ("git read-tree -u --reset HEAD", False),
    ("git read-tree --reset -u HEAD", False),
    ("git reset --merge", True),  # the edit staged: --merge drops it from index and work tree
    ("git clean -Xf", False),
    # git takes a unique prefix of a long option as the option
    ("git reset --har", False),
    ("git checkout --forc main", False),
    ("git read-tree --rese -u HEAD", False),
    ("git -c clean.requireForce=false clean", False),
    ("git rm -f Makefile", False),  # the file and its edit gone: git rm without -f refuses
    ("git rm -rf .", False),
    ("git rm --forc Makefile", False),
    ("git mv -f calc.py Makefile", False),  # moved over the edited file, which it replaces
    ("git mv --forc calc.py Makefile", False),
    # hunk by hunk, the answers piped in: every hunk thrown away, with no path named
    ("yes | git checkout -p", False),
    ("yes | git restore --patch", False),
    ("git checkout --merge Makefile", False),  # -m with a path: the file, not a merge
    # `--no-NAME` (or a prefix of it) takes NAME back: each ran and deleted
    ("git clean -n --no-dry-run -f", False),
    ("git rm -n --no-dry -f Makefile", False),
    ("git mv -n --no-dry-run -f calc.py Makefile", False),
    ("git rm --cached --no-cached -f Makefile", False),
    # git runs the command nearest a verb it does not know (`reset` for `rset`)
    ("git -c help.autocorrect=immediate rset --hard", False),
    ("git -c help.autocorrect=1 chekout Makefile", False),
]


@pytest.mark.parametrize(("command", "staged"), DISCARDING)
def test_a_git_form_that_discards_work_is_refused_and_reported(
    failing_repo: Path, command: str, staged: bool
) -> None:
    """Each of these ran in ci mode and threw away the user's edit to `Makefile`, the untracked
    note or the ignored log, while `git reset --hard` and `git checkout -- PATH` were refused."""
    _workspace(failing_repo)
    if staged:
        git(failing_repo, "add", "Makefile")
    proc = _run(failing_repo, command)
    assert proc.returncode == 5, proc.stderr
    report = json.loads(proc.stdout)
    assert [(r["tool"], r["reason"]) for r in report["refusals"]] == [
        ("run_command", f"{REFUSED}: {command}")
    ]
    summary = (failing_repo.parent / "out" / "summary.md").read_text()
    assert "### Refused by policy" in summary and f"{REFUSED}: {command}" in summary
    _work_is_intact(failing_repo)


@pytest.mark.parametrize(
    "command",
    ["git checkout Makefile",  # a branch of that name: git switches to it, keeping the edit
     "git reset --keep", "git clean -n", "git checkout-index -a", "git read-tree -m -u HEAD",
     "git rm Makefile", "git rm --cached -f Makefile", "git rm -n -f Makefile",
     "git mv -n -f calc.py Makefile",
     "git checkout -m Makefile"],  # a three-way merge: the edit stays in the work tree
)  # fmt: skip
def test_a_git_form_that_keeps_work_still_runs(failing_repo: Path, command: str) -> None:
    _workspace(failing_repo)
    git(failing_repo, "branch", "Makefile")
    proc = _run(failing_repo, command)
    assert json.loads(proc.stdout)["refusals"] == [], proc.stderr
    _work_is_intact(failing_repo)
    if command == "git checkout Makefile":
        assert git(failing_repo, "branch", "--show-current").strip() == "Makefile"


ALIASES = {
    "alias.co": "checkout",
    "alias.c2": "co",  # an alias of an alias
    "alias.wipe": "!git checkout -- Makefile",  # a shell alias
    "alias.l1": "l2",  # a loop
    "alias.l2": "l1",
    "alias.st": "status",
}


def _aliased(repo: Path) -> None:
    _workspace(repo)
    for key, value in ALIASES.items():
        git(repo, "config", key, value)


@pytest.mark.parametrize(
    "command",
    ["git co Makefile", "git c2 Makefile", "git wipe", "git l1",
     "git -C . co Makefile",
     # the alias is written by the line itself, after the line was checked
     "git config alias.zz checkout && git zz Makefile"],
)  # fmt: skip
def test_a_git_alias_that_discards_work_is_refused(failing_repo: Path, command: str) -> None:
    """A repository's `alias.co = checkout` made `git co Makefile` run past the check and
    throw the edit away; `!` aliases too. (`git -c alias.x=…` was refused before: a `-c` key
    that names a program is not understood.)"""
    _aliased(failing_repo)
    proc = _run(failing_repo, command)
    assert proc.returncode == 5, proc.stderr
    report = json.loads(proc.stdout)
    assert [(r["tool"], r["reason"]) for r in report["refusals"]] == [
        ("run_command", f"{REFUSED}: {command}")
    ]
    _work_is_intact(failing_repo)
    assert "alias.zz" not in git(failing_repo, "config", "--list")  # the line ran no part


@pytest.mark.parametrize("command", ["git st", "git nosuchverb"])
def test_a_git_alias_that_keeps_work_still_runs(failing_repo: Path, command: str) -> None:
    _aliased(failing_repo)
    proc = _run(failing_repo, command)
    assert json.loads(proc.stdout)["refusals"] == [], proc.stderr
    _work_is_intact(failing_repo)


TOKEN = "ghp_" + "a1B2c3D4e5" * 4  # the shape of a GitHub token
SECRET = "plain-secret-value-42"  # a secret by its variable's name only


def test_the_refusal_names_the_command_cut_and_redacted(failing_repo: Path) -> None:
    """The refusal said only "destructive commands are not allowed in ci mode": the reader of
    the posted summary could not tell what was refused. It names the command now, as one line
    of whole words, with a token-shaped word and a secret's value redacted as the other prose
    outputs do (the secret's value was in report.json's refusals)."""
    _workspace(failing_repo)
    files = " ".join(f"file{n:03}.txt" for n in range(60))
    command = f"git checkout -- Makefile {TOKEN} {SECRET}\t\x1b[2J {files}"
    proc = _run(failing_repo, command, DEPLOY_TOKEN=SECRET)
    assert proc.returncode == 5, proc.stderr
    (reason,) = [r["reason"] for r in json.loads(proc.stdout)["refusals"]]
    assert reason.startswith(
        f"{REFUSED}: git checkout -- Makefile [REDACTED] [REDACTED:DEPLOY_TOKEN] \\x1b[2J file000"
    )
    assert reason.endswith(" …") and "file059" not in reason and len(reason) < 200
    summary = (failing_repo.parent / "out" / "summary.md").read_text()
    assert "git checkout -- Makefile [REDACTED]" in summary
    report = (failing_repo.parent / "out" / "report.json").read_text()
    assert TOKEN not in summary + report and SECRET not in summary + report + proc.stdout
    _work_is_intact(failing_repo)


def test_an_alias_from_the_environments_git_config_is_seen(failing_repo: Path) -> None:
    """Commands see the git config the run's environment gives (`GIT_CONFIG_COUNT`, `_KEY_n`,
    `_VALUE_n`, as a workflow sets it): the alias lookup left it out, so `git co Makefile` ran."""
    _workspace(failing_repo)
    alias = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "alias.co",
        "GIT_CONFIG_VALUE_0": "checkout",
    }
    proc = _run(failing_repo, "git co Makefile", **alias)
    assert proc.returncode == 5, proc.stderr
    assert [r["reason"] for r in json.loads(proc.stdout)["refusals"]] == [
        f"{REFUSED}: git co Makefile"
    ]
    _work_is_intact(failing_repo)


def test_an_alias_from_the_system_git_config_is_seen(failing_repo: Path) -> None:
    """git reads the system config (`/etc/gitconfig`, or the file `GIT_CONFIG_SYSTEM` names),
    and so do the commands; the alias lookup skipped it, so a runner image's `alias.co =
    checkout` made `git co Makefile` run and discard the edit."""
    _workspace(failing_repo)
    system = failing_repo / ".git" / "system-gitconfig"  # where commands in the sandbox see it
    system.write_text("[alias]\n\tco = checkout\n")
    proc = _run(failing_repo, "git co Makefile", GIT_CONFIG_SYSTEM=str(system))
    assert proc.returncode == 5, proc.stderr
    assert [r["reason"] for r in json.loads(proc.stdout)["refusals"]] == [
        f"{REFUSED}: git co Makefile"
    ]
    _work_is_intact(failing_repo)


def test_the_system_git_config_reaches_commands(failing_repo: Path) -> None:
    """An alias of the system config that keeps work runs as git outside would run it."""
    _workspace(failing_repo)
    system = failing_repo / ".git" / "system-gitconfig"
    system.write_text("[alias]\n\tst = status --short\n")
    proc = _run(failing_repo, "git st", GIT_CONFIG_SYSTEM=str(system))
    report = json.loads(proc.stdout)
    assert report["refusals"] == [], proc.stderr
    assert " M Makefile" in (failing_repo.parent / "out" / "transcript.jsonl").read_text()
    _work_is_intact(failing_repo)


def test_a_branch_deleted_earlier_in_the_line_is_no_revision(failing_repo: Path) -> None:
    """`git checkout Makefile` with a branch `Makefile` switches to it, and runs; but the line
    deleted the branch first, so git took `Makefile` for the file and discarded the edit: the
    check had asked git before the line ran. In a line with other commands, the name is a path."""
    _workspace(failing_repo)
    git(failing_repo, "branch", "Makefile")
    command = "git branch -D Makefile && git checkout Makefile"
    proc = _run(failing_repo, command)
    assert proc.returncode == 5, proc.stderr
    assert [r["reason"] for r in json.loads(proc.stdout)["refusals"]] == [f"{REFUSED}: {command}"]
    _work_is_intact(failing_repo)
    assert "Makefile" in git(failing_repo, "branch", "--list", "Makefile")  # the line ran no part


def _linked_worktree(repo: Path) -> Path:
    """A linked worktree of the user's inside the workspace, with an edit and an untracked file."""
    git(repo, "worktree", "add", "-q", "wt", "-b", "side")
    (repo / "wt" / "calc.py").write_text((repo / "wt" / "calc.py").read_text() + EDIT)
    (repo / "wt" / "notes.txt").write_text("untracked notes\n")
    return repo / "wt"


@pytest.mark.parametrize(
    "command", ["git worktree remove --force wt", "git worktree remove -f wt",
                "git worktree remove --forc wt", "git worktree remove -ff wt"],
)  # fmt: skip
def test_removing_a_linked_worktree_by_force_is_refused(failing_repo: Path, command: str) -> None:
    """`git worktree remove --force wt` deleted the worktree's files, the edit among them, and
    the run said "nothing to do" (exit 11): the files lay in a nested repository the kept work
    does not hold."""
    wt = _linked_worktree(failing_repo)
    proc = _run(failing_repo, command)
    assert proc.returncode == 5, proc.stderr
    assert [r["reason"] for r in json.loads(proc.stdout)["refusals"]] == [f"{REFUSED}: {command}"]
    assert (wt / "calc.py").read_text().endswith(EDIT)
    assert (wt / "notes.txt").read_text() == "untracked notes\n"


def test_removing_a_linked_worktree_without_force_is_refused(failing_repo: Path) -> None:
    """Without `--force`, git keeps a worktree with edits or untracked files, but removes one
    whose only files of the user's are ignored (`local.env`), as `git clean -X` would."""
    git(failing_repo, "worktree", "add", "-q", "wt", "-b", "side")
    (failing_repo / "wt" / ".gitignore").write_text("*.env\n")
    git(failing_repo / "wt", "add", ".gitignore")
    git(failing_repo / "wt", "commit", "-qm", "ignore env")
    (failing_repo / "wt" / "local.env").write_text("TOKEN=the user's\n")
    proc = _run(failing_repo, "git worktree remove wt")
    assert proc.returncode == 5, proc.stderr
    reasons = [r["reason"] for r in json.loads(proc.stdout)["refusals"]]
    assert reasons == [f"{REFUSED}: git worktree remove wt"]
    assert (failing_repo / "wt" / "local.env").read_text() == "TOKEN=the user's\n"


def test_a_misspelled_verb_under_the_repositorys_autocorrect_is_refused(failing_repo: Path) -> None:
    """`help.autocorrect = immediate` in the repository's (or the user's) config: `git chekout
    Makefile` ran `git checkout Makefile`; a verb git does not know runs when nothing corrects it."""
    _workspace(failing_repo)
    git(failing_repo, "config", "help.autocorrect", "immediate")
    proc = _run(failing_repo, "git chekout Makefile")
    assert proc.returncode == 5, proc.stderr
    reasons = [r["reason"] for r in json.loads(proc.stdout)["refusals"]]
    assert reasons == [f"{REFUSED}: git chekout Makefile"]
    _work_is_intact(failing_repo)
    git(failing_repo, "config", "help.autocorrect", "never")
    proc = _run(failing_repo, "git chekout Makefile")
    assert json.loads(proc.stdout)["refusals"] == [], proc.stderr
    _work_is_intact(failing_repo)
