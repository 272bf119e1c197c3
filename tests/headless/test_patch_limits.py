"""A run whose changes are too large for a patch (docs/ci.md, "Outputs"): one line, exit code 3,
no patch file and no branch, through the real `kiln run --ci` with the scripted model."""

from __future__ import annotations

import json
from pathlib import Path

from tests.repos import committing_repo, git
from tests.security.scripted_run import kiln_run


def test_a_change_over_the_patch_limit_ends_with_one_line_and_nothing_half_done(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = tmp_path / "repo"
    committing_repo(root)("init", {"a.txt": "a\n"})
    write = "python3 -c \"import os; open('big.bin', 'wb').write(os.urandom(3 << 20))\""
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": write}}]}, "done"]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()  # used by an earlier run: its patch was left beside this run's report
    (artifacts / "changes.patch").write_text("an earlier run's patch\n")
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci", output="text",
        extra=("--ci", "--max-patch-mb", "1", "--commit-branch", "kiln/big",
               "--artifacts", str(artifacts)),
    )  # fmt: skip
    assert (root / "big.bin").stat().st_size == 3 << 20  # the agent's command ran
    assert proc.returncode == 3, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "too large" in line]
    assert lines == ["kiln: the run's changes are too large for a patch: over 3 MB (at most 1 MB)"]
    assert not (artifacts / "changes.patch").exists()
    # the closing lines name only what was written: no "patch: " pointing nowhere
    assert f"summary: {artifacts / 'summary.md'}" in proc.stderr
    assert not [line for line in proc.stderr.splitlines() if line.startswith("patch:")]
    assert "kiln/big" not in git(root, "branch", "--list")
    report = json.loads((artifacts / "report.json").read_text())
    assert report["exit_code"] == 3 and report["patch"] == "" and "too large" in report["error"]


def test_more_files_than_a_patch_holds_end_the_same_way(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    committing_repo(root)("init", {"a.txt": "a\n"})
    many = "python3 -c \"import os; os.mkdir('gen'); [open(f'gen/{i}', 'w').close() for i in range(20001)]\""
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": many}}]}, "done"]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    artifacts = tmp_path / "artifacts"
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci", output="json",
        extra=("--ci", "--commit-branch", "kiln/many", "--artifacts", str(artifacts)),
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "kiln: the run changed 20001 files; a patch holds at most 20000" in proc.stderr
    assert not (artifacts / "changes.patch").exists()
    assert "kiln/many" not in git(root, "branch", "--list")


def test_a_fractional_patch_limit_is_named_as_given(tmp_path: Path, kiln_home: Path) -> None:
    """`--max-patch-mb 0.5` is reported as 0.5 MB, not rounded to "at most 0 MB"."""
    root = tmp_path / "repo"
    committing_repo(root)("init", {"a.txt": "a\n"})
    write = "python3 -c \"import os; open('big.bin', 'wb').write(os.urandom(1 << 20))\""
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": write}}]}, "done"]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci", output="text",
        extra=("--ci", "--max-patch-mb", "0.5", "--artifacts", str(tmp_path / "artifacts")),
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "too large" in line]
    too_large = "kiln: the run's changes are too large for a patch: over 1 MB (at most 0.5 MB)"
    assert lines == [too_large]
