"""A file the run makes whose name is not UTF-8 (a test fixture, a build output, or a name the
repository's code chose): before, Kiln's git calls read its name with the byte replaced, `git
add` found no such file, and the run ended with exit 1 and no patch. Now the name keeps its
bytes through the patch, the branch and every output, and each output is valid UTF-8 (the JSON
writes the byte as an escape, the summary shows it escaped). Through the real `kiln run --ci`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

MAKE = "python3 -c \"open(b'caf\\xe9.txt', 'wb').write(b'bytes\\n')\""


def test_a_name_that_is_not_utf8_reaches_the_patch_and_branch(
    failing_repo: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "run_command", "input": {"command": MAKE}}]}, "Made it.",
    ]))  # fmt: skip
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--artifacts", str(out),
         "--commit-branch", "kiln/name", "--output-format", "json", "make the fixture"],
        cwd=failing_repo, env={**os.environ, "KILN_PROVIDER": "scripted",
                               "KILN_SCRIPT": str(script)},
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 10, proc.stderr
    report = json.loads(proc.stdout.decode("utf-8"))  # strict UTF-8
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    assert [f["path"] for f in report["files_changed"]] == [name]
    assert json.loads((out / "report.json").read_bytes().decode("utf-8")) == report
    (out / "transcript.jsonl").read_bytes().decode("utf-8")
    assert "<code>caf\\udce9.txt</code>" in (out / "summary.md").read_bytes().decode("utf-8")
    tree = subprocess.run(["git", "ls-tree", "-r", "-z", "--name-only", "kiln/name"],
                          cwd=failing_repo, capture_output=True, check=True).stdout  # fmt: skip
    assert b"caf\xe9.txt\0" in tree
    (failing_repo / os.fsdecode(b"caf\xe9.txt")).unlink()
    subprocess.run(["git", "checkout", "-q", "main"], cwd=failing_repo, check=True)
    applied = subprocess.run(["git", "apply", str(out / "changes.patch")], cwd=failing_repo,
                             capture_output=True)  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    assert (failing_repo / os.fsdecode(b"caf\xe9.txt")).read_bytes() == b"bytes\n"


def test_a_checkout_whose_path_holds_a_new_line_is_a_checkout(tmp_path: Path) -> None:
    """A runner's work folder may hold any character: in `ci job\\n2/repo`, `kiln run --ci`
    read git's three answers (work tree, git dir, common dir) by lines, found five, and refused
    the checkout as "not a git checkout" in two lines of stderr."""
    from tests.repos import make_failing_repo

    (tmp_path / "ci job\n2").mkdir()
    repo = make_failing_repo(tmp_path / "ci job\n2")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "edit_file", "input": {
            "path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}}]},
        "Fixed.",
    ]))  # fmt: skip
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--artifacts", str(out),
         "--commit-branch", "kiln/fix", "--output-format", "json", "fix add"],
        cwd=repo, env={**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 10, proc.stderr
    report = json.loads(proc.stdout)
    assert report["branch"] == "kiln/fix"
    assert [f["path"] for f in report["files_changed"]] == ["calc.py"]
    assert "+    return a + b" in (out / "changes.patch").read_text()
