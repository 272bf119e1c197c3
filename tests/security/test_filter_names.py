"""Kiln's own git calls in `kiln run --ci` switch off every filter driver the config defines with
`-c filter.NAME.clean=` (docs/security.md section 8). Git splits `-c` at its first `=`, so a
driver named `a=b` (`[filter "a=b"]`, chosen by `* filter=a=b` in `.gitattributes`) was not
switched off: `-c filter.a=b.clean=` set a key `filter.a` instead, and the planted clean command
ran on the host at Kiln's `git add` of the patch and the branch. Through the real
`kiln run --ci --commit-branch`; the marker is looked for outside /tmp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import git
from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


@pytest.mark.parametrize("driver", ["a=b", "x.y=z", "=", "ev"])
def test_no_filter_driver_runs_whatever_its_name(
    tmp_path: Path, kiln_home: Path, host_dir: Path, driver: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitattributes").write_text(f"* filter={driver}\n")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", "init")
    marker = host_dir / "filter-ran"
    with (root / ".git" / "config").open("a") as config:  # planted, as in the g-* attacks
        config.write(f'[filter "{driver}"]\n\tclean = touch {marker}; cat\n\trequired = true\n')
        config.write("[user]\n\tname = dev\n\temail = dev@example.com\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "write_file", "input": {"path": "b.txt", "content": "b\n"}}]},
        "done",
    ]))  # fmt: skip
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
                    extra=("--ci", "--commit-branch", "kiln/x"), timeout=300)  # fmt: skip
    result = json.loads(proc.stdout)
    assert not marker.exists(), f"the filter driver {driver!r} ran on the host"
    assert result["branch"] == "kiln/x", result
    assert "b.txt" in git(root, "ls-tree", "-r", "--name-only", "kiln/x"), result
