"""`kiln run` and `kiln run --ci` as a pipeline would call them: real subprocesses, real git repos,
the scripted model selected through the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repos import PYTEST

pytestmark = pytest.mark.e2e


def kiln(
    root: Path, script: list, *args: str, env: dict | None = None
) -> subprocess.CompletedProcess:
    script_path = root.parent / "script.json"
    script_path.write_text(json.dumps(script))
    full_env = {
        **os.environ,
        "KILN_PROVIDER": "scripted",
        "KILN_SCRIPT": str(script_path),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", *args],
        cwd=root,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "input": args}]}


FIX = [
    call("grep", pattern="def add"),
    call("read_file", path="calc.py"),
    call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    call("run_command", command=PYTEST),
    {"match": "1 passed", "text": "Fixed add(): it subtracted. The test passes now."},
]


def test_ci_fixes_verifies_commits_and_summarises(failing_repo: Path, tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    proc = kiln(
        failing_repo,
        FIX,
        "--ci",
        "--verify",
        PYTEST,
        "--commit-branch",
        "kiln/fix-add",
        "--author",
        "Kiln Bot <bot@kiln.invalid>",
        "--artifacts",
        str(artifacts),
        "--output-format",
        "json",
        "Fix the failing test",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["outcome"] == "ok"
    assert report["verify_before"]["passed"] is False and report["verify_after"]["passed"] is True
    assert report["agent_ran_verify"] is True
    assert report["files_changed"] == [{"path": "calc.py", "added": 1, "removed": 1}]
    patch = Path(report["patch"]).read_text()
    assert "-    return a - b" in patch and "+    return a + b" in patch
    # the patch applies to the original tree
    log = subprocess.run(
        ["git", "log", "--format=%an <%ae>|%s", "-1", "kiln/fix-add"],
        cwd=failing_repo,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert log.startswith("Kiln Bot <bot@kiln.invalid>|Fixed add()")
    subprocess.run(["git", "switch", "-q", "main"], cwd=failing_repo, check=True)
    check = subprocess.run(
        ["git", "apply", "--check", report["patch"]], cwd=failing_repo, capture_output=True
    )
    assert check.returncode == 0
    summary = Path(report["summary"]).read_text()
    assert (
        "calc.py" in summary
        and "before: " in summary
        and "passed" in summary
        and "cache hit share" in summary
    )
    transcript = [json.loads(line) for line in Path(report["transcript"]).read_text().splitlines()]
    assert [b["name"] for m in transcript for b in m["content"] if b.get("type") == "tool_use"] == [
        "grep",
        "read_file",
        "edit_file",
        "run_command",
    ]


def test_forbidden_actions_are_refused_and_nothing_outside_changes(
    failing_repo: Path, tmp_path: Path
) -> None:
    home = Path(os.environ["KILN_HOME"])
    outside = tmp_path / "outside.txt"
    secret = "s3cr3t-value-123456"
    script = [
        call("write_file", path=str(outside), content="pwned"),
        call("run_command", command="curl http://example.invalid/x"),
        call("run_command", command="rm -rf ~"),
        call("read_file", path="~/.ssh/id_rsa"),
        call("run_command", command="echo $DEPLOY_TOKEN"),
        "I could not do those things.",
    ]
    proc = kiln(
        failing_repo,
        script,
        "--ci",
        "--output-format",
        "json",
        "do bad things",
        env={"DEPLOY_TOKEN": secret, "HOME": str(tmp_path / "home")},
    )
    assert proc.returncode == 5, proc.stderr
    report = json.loads(proc.stdout)
    assert report["outcome"] == "refused by policy"
    tools = [r["tool"] for r in report["refusals"]]
    assert tools == ["run_command", "run_command"]  # curl (network) and rm -rf ~ (destructive)
    assert not outside.exists()
    transcript = Path(report["transcript"]).read_text()
    assert "outside the workspace" in transcript
    assert secret not in transcript  # the command's environment never had it (scrubbed)
    assert secret not in proc.stdout
    assert home.exists()
    assert (
        subprocess.run(
            ["git", "status", "--porcelain"], cwd=failing_repo, capture_output=True, text=True
        ).stdout
        == ""
    )


def test_limit_reached_ends_cleanly_with_partial_report(failing_repo: Path) -> None:
    script = [
        call("list_files"),
        call("read_file", path="calc.py"),
        call("grep", pattern="add"),
        "never reached",
    ]
    proc = kiln(
        failing_repo,
        script,
        "--ci",
        "--max-steps",
        "2",
        "--verify",
        PYTEST,
        "--output-format",
        "json",
        "go",
    )
    assert proc.returncode == 3
    report = json.loads(proc.stdout)
    assert report["stop_reason"] == "max_steps" and report["steps"] == 2
    assert (
        Path(report["summary"]).is_file() and "limit reached" in Path(report["summary"]).read_text()
    )


def test_provider_failure_returns_provider_code(failing_repo: Path) -> None:
    proc = kiln(
        failing_repo, [{"raise": "unavailable", "message": "connection refused"}], "--ci", "go"
    )
    assert proc.returncode == 4
    assert "connection refused" in proc.stderr


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_a_provider_failure_is_one_line_on_stderr_in_json_too(
    failing_repo: Path, output_format: str
) -> None:
    """With the result on stdout (`> report.json`), a CI log showed nothing of why the run
    failed: a limit printed its line on stderr, a provider failure none."""
    script = [{"raise": "unavailable", "message": "connection refused"}]
    proc = kiln(failing_repo, script, "--ci", "--output-format", output_format, "go")
    assert proc.returncode == 4
    assert [line for line in proc.stderr.splitlines() if line.strip()] == [
        "kiln: connection refused"
    ], proc.stderr


def test_nothing_to_do_and_stream_json(failing_repo: Path) -> None:
    (failing_repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "commit", "-qam", "fixed"], cwd=failing_repo, check=True)
    proc = kiln(
        failing_repo,
        [call("run_command", command=PYTEST), "Already passing."],
        "--ci",
        "--verify",
        PYTEST,
        "--output-format",
        "stream-json",
        "fix the tests",
    )
    assert proc.returncode == 11, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [x["type"] for x in lines]
    assert (
        "tool_call" in types and types[-1] == "result" and lines[-1]["outcome"] == "nothing to do"
    )


def test_github_event_comment_becomes_the_task(failing_repo: Path, tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "comment": {
                    "body": "/kiln please fix the add test",
                    "author_association": "MEMBER",
                    "user": {"login": "maintainer"},
                },
                "issue": {"number": 7, "title": "add is broken"},
            }
        )
    )
    proc = kiln(
        failing_repo,
        [{"match": "please fix the add test", "text": "ok"}],
        "--ci",
        "--github-event",
        str(event),
        "--output-format",
        "json",
    )
    assert proc.returncode == 11, proc.stderr
    assert json.loads(proc.stdout)["task"].startswith("please fix the add test")


def test_bad_usage_exits_2(failing_repo: Path) -> None:
    proc = kiln(failing_repo, [], "--commit-branch", "x", "task")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "--ci" in proc.stderr
    proc = kiln(failing_repo, [])
    assert proc.returncode == 2 and "exactly one of" in proc.stderr
    proc = kiln(failing_repo, [], "hello", env={"KILN_PROVIDER": "nope"})
    assert (
        proc.returncode == 2
        and "unknown provider 'nope'" in proc.stderr
        and "Traceback" not in proc.stderr
    )
    proc = kiln(failing_repo, [], "hello", env={"KILN_PROVIDER": "anthropic"})
    assert (
        proc.returncode in (2, 4)
        and "ANTHROPIC_API_KEY" in proc.stderr
        and "Traceback" not in proc.stderr
    )


def test_patch_and_commit_hold_only_what_the_run_changed(failing_repo: Path) -> None:
    """A file dirty before the run is left out unless the agent edits it (docs/ci.md)."""
    (failing_repo / "notes.txt").write_text("the user's own untracked notes\n")
    calc = failing_repo / "calc.py"
    calc.write_text("# the user's edit\n" + calc.read_text())
    proc = kiln(
        failing_repo,
        FIX,
        "--ci",
        "--verify",
        PYTEST,
        "--commit-branch",
        "kiln/only-mine",
        "--artifacts",
        "kiln-out",
        "--output-format",
        "json",
        "Fix the failing test",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [f["path"] for f in report["files_changed"]] == ["calc.py"]
    committed = subprocess.run(
        ["git", "show", "--name-only", "--format=", "kiln/only-mine"],
        cwd=failing_repo,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert committed == ["calc.py"]
    diff = subprocess.run(["git", "show", "--format=", "kiln/only-mine"], cwd=failing_repo,
                          capture_output=True, text=True).stdout  # fmt: skip
    assert "+# the user's edit" in diff and "+    return a + b" in diff
    assert (failing_repo / "notes.txt").exists() and (
        failing_repo / "kiln-out" / "summary.md"
    ).exists()


def test_a_dirty_file_a_command_edits_is_the_runs_change(failing_repo: Path) -> None:
    """The agent fixed a file the user had edited with a command (`sed -i`) rather than
    edit_file: the run said "nothing to do" (exit 11) and its fix was in no patch and no branch.
    A dirty file the verification leaves as it was (`test_calc.py` here) stays out."""
    calc = failing_repo / "calc.py"
    calc.write_text("# the user's edit\n" + calc.read_text())
    tests = failing_repo / "test_calc.py"
    tests.write_text(tests.read_text() + "# the user's note\n")
    sed = {"tool_calls": [{"name": "run_command",
                           "input": {"command": "sed -i 's/a - b/a + b/' calc.py"}}]}  # fmt: skip
    proc = kiln(failing_repo, [sed, "Fixed the sign."], "--ci", "--verify", PYTEST,
                "--commit-branch", "kiln/sed", "--output-format", "json", "fix")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [f["path"] for f in report["files_changed"]] == ["calc.py"]
    diff = subprocess.run(["git", "show", "--format=", "kiln/sed"], cwd=failing_repo,
                          capture_output=True, text=True).stdout  # fmt: skip
    assert "+    return a + b" in diff and "test_calc.py" not in diff


REFUSED = "destructive commands are not allowed in ci mode"


@pytest.mark.parametrize("command", ["git stash", "git stash -u", "git -C . stash save wip"])
def test_git_stash_is_refused_and_the_users_edit_stays(failing_repo: Path, command: str) -> None:
    """`git stash` took the user's uncommitted edit out of the work tree; the run then put
    refs/stash back as it found it (none), so the edit was in no file, no patch and no ref."""
    calc = failing_repo / "calc.py"
    calc.write_text(calc.read_text() + "# the user's uncommitted work\n")
    stash = {"tool_calls": [{"name": "run_command", "input": {"command": command}}]}
    proc = kiln(failing_repo, [stash, "Stashed."], "--ci", "--output-format", "json", "fix")
    assert proc.returncode == 5, proc.stderr
    refusals = json.loads(proc.stdout)["refusals"]
    assert [r["reason"] for r in refusals] == [f"{REFUSED}: {command}"]
    assert calc.read_text().endswith("# the user's uncommitted work\n")


DISCARDING = ["git checkout -- .", "git checkout -- calc.py", "git checkout calc.py",
              "git checkout HEAD calc.py", "git restore calc.py", "git restore .",
              "git restore --worktree --staged calc.py", "git checkout -f main",
              "git switch --discard-changes main", "git -C . checkout --force main"]  # fmt: skip


@pytest.mark.parametrize("command", DISCARDING)
def test_a_checkout_or_restore_that_discards_edits_is_refused(
    failing_repo: Path, command: str
) -> None:
    """`git checkout -- .`, `git restore FILE`, `git checkout -f BRANCH` overwrite the user's
    uncommitted edit as `git reset --hard` does, which ci mode refused while it allowed them."""
    calc = failing_repo / "calc.py"
    calc.write_text(calc.read_text() + "# the user's uncommitted work\n")
    step = {"tool_calls": [{"name": "run_command", "input": {"command": command}}]}
    proc = kiln(failing_repo, [step, "Done."], "--ci", "--output-format", "json", "fix")
    assert proc.returncode == 5, proc.stderr
    refusals = json.loads(proc.stdout)["refusals"]
    assert [r["reason"] for r in refusals] == [f"{REFUSED}: {command}"]
    assert calc.read_text().endswith("# the user's uncommitted work\n")


@pytest.mark.parametrize(
    "command", ["git restore --staged calc.py", "git checkout main", "git switch main"]
)
def test_a_checkout_that_keeps_edits_still_runs(failing_repo: Path, command: str) -> None:
    calc = failing_repo / "calc.py"
    calc.write_text(calc.read_text() + "# the user's uncommitted work\n")
    step = {"tool_calls": [{"name": "run_command", "input": {"command": command}}]}
    proc = kiln(failing_repo, [step, "Done."], "--ci", "--output-format", "json", "fix")
    assert json.loads(proc.stdout)["refusals"] == [], proc.stderr
    assert calc.read_text().endswith("# the user's uncommitted work\n")


def test_bad_branch_or_author_is_refused_before_the_run(failing_repo: Path) -> None:
    subprocess.run(["git", "branch", "taken"], cwd=failing_repo, check=True)
    proc = kiln(failing_repo, FIX, "--ci", "--commit-branch", "taken", "fix")
    assert (
        proc.returncode == 2 and "already exists" in proc.stderr and "Traceback" not in proc.stderr
    )
    proc = kiln(
        failing_repo, FIX, "--ci", "--commit-branch", "new-one", "--author", "nobody", "fix"
    )
    assert proc.returncode == 2 and "Name <email>" in proc.stderr
    assert (failing_repo / "calc.py").read_text().count("a - b") == 1  # the run never started
    head = subprocess.run(
        ["git", "branch", "--show-current"], cwd=failing_repo, capture_output=True, text=True
    )
    assert head.stdout.strip() == "main"


def test_from_a_subfolder_the_verification_runs_at_the_repository_root(
    failing_repo: Path,
) -> None:
    """docs/ci.md: started in a subfolder, the workspace is the repository's root, and
    `--verify` runs there, as the agent's own commands do."""
    (failing_repo / "pkg").mkdir()
    proc = kiln(failing_repo / "pkg", ["done"], "--ci", "--verify", "test -f calc.py",
                "--output-format", "json", "go")  # fmt: skip
    assert proc.returncode == 11, proc.stderr
    assert json.loads(proc.stdout)["verify_before"]["passed"] is True
