"""Repository config a checkout can ship, beyond the keys of the `g-planted-*` attacks: every
other key and hook that would make Kiln's own git calls in `kiln run --ci --commit-branch` run a
program (docs/security.md section 8), `.gitmodules` transports, and `GIT_*` variables in Kiln's
own environment. The marker is looked for outside /tmp."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import git
from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

HOOKS = ("pre-commit", "commit-msg", "prepare-commit-msg", "post-commit", "post-checkout",
         "reference-transaction", "post-index-change", "pre-auto-gc")  # fmt: skip


def plant_hooks(folder: Path, touch: str) -> None:
    """Every hook in ``HOOKS``, each leaving its own marker through ``touch``."""
    for hook in HOOKS:
        (folder / hook).write_text(f"#!/bin/sh\n{touch}-{hook}\n")
        (folder / hook).chmod(0o755)


def fix_add(
    root: Path, tmp_path: Path, kiln_home: Path, branch: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`kiln run --ci --commit-branch BRANCH` in ``root``: the scripted model fixes calc.py's
    ``add`` (``a - b`` -> ``a + b``) and says so."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "edit_file", "input": {
            "path": "calc.py", "old_text": "a - b", "new_text": "a + b"}}]},
        "Fixed add.",
    ]))  # fmt: skip
    return kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
                    extra=("--ci", "--commit-branch", branch), env=env)  # fmt: skip


def test_shipped_config_hooks_and_gitmodules_run_nothing_on_the_host(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    touch = f"touch {host_dir}/ran"
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / ".gitattributes").write_text("* diff=tc merge=mg\n")
    (root / ".gitmodules").write_text(
        '[submodule "m"]\n\tpath = m\n'
        f"\turl = ext::sh -c {touch}-ext% >&2\n\tupdate = !{touch}-update\n"
    )
    (root / "included.cfg").write_text(f"[core]\n\tfsmonitor = {touch}-include; false\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    for key, value in (
        ("include.path", str(root / "included.cfg")),
        (f"includeIf.gitdir:{root}/.path", str(root / "included.cfg")),
        ("diff.tc.textconv", f"{touch}-textconv; cat"),
        ("diff.tc.command", f"{touch}-diffcmd"),
        ("merge.mg.driver", f"{touch}-merge"),
        ("core.editor", f"{touch}-editor"),
        ("sequence.editor", f"{touch}-sequence"),
        ("pager.status", f"{touch}-pager; cat"),
        ("pager.diff", f"{touch}-pager; cat"),
        ("core.alternateRefsCommand", f"{touch}-altrefs"),
        ("uploadpack.packObjectsHook", f"{touch}-packhook"),
        ("submodule.recurse", "true"),
        ("submodule.m.update", f"!{touch}-update"),
        ("submodule.m.url", f"ext::sh -c {touch}-ext% >&2"),
        ("protocol.allow", "always"),
        ("status.submoduleSummary", "true"),
        ("gc.auto", "1"),
        ("gc.autoDetach", "false"),
    ):
        git(root, "config", key, value)
    plant_hooks(root / ".git" / "hooks", touch)
    # Kiln's environment names another repository (one with the branch already in it)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(
        other,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "o",
    )
    git(other, "branch", "kiln/cfg")
    proc = fix_add(
        root, tmp_path, kiln_home, "kiln/cfg",
        env={"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other)},
    )  # fmt: skip
    result = json.loads(proc.stdout)
    assert result["branch"] == "kiln/cfg", proc.stderr
    assert git(root, "show", "kiln/cfg:calc.py").endswith("a + b\n")  # the workspace's repo
    assert "kiln/cfg" not in git(other, "log", "--all", "--format=%s")  # nothing went there
    assert sorted(p.name for p in host_dir.iterdir()) == [], "a planted command ran on the host"


def test_a_dot_git_file_naming_a_prepared_git_folder_runs_nothing_on_the_host(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    """The checkout's `.git` is a file (`gitdir: .prepared`) naming a git folder that arrived with
    hooks and config of its own: `kiln index` (the history's `git log`) and `kiln run --ci
    --commit-branch` use that repository, and run none of it."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main", "--separate-git-dir", str(root / ".prepared"))
    (root / ".git").write_text("gitdir: .prepared\n")  # relative, as a tarball would ship it
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "add numbers")
    touch = f"touch {host_dir}/ran"
    for key, value in (
        ("core.fsmonitor", f"{touch}-fsmonitor; false"),
        ("core.pager", f"{touch}-pager; cat"),
        ("log.showSignature", "true"),
        ("gpg.program", f"{touch}-gpg"),
        ("diff.external", f"{touch}-diff"),
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.url", f"ext::sh -c {touch}-ext% >&2"),
        ("remote.origin.promisor", "true"),
        ("protocol.ext.allow", "always"),
    ):
        git(root, "config", key, value)
    plant_hooks(root / ".prepared" / "hooks", touch)
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home)}
    index = subprocess.run([sys.executable, "-m", "lsp_server", "index", "--json"], cwd=root,
                           env=env, capture_output=True, text=True)  # fmt: skip
    assert index.returncode == 0, index.stderr
    proc = fix_add(root, tmp_path, kiln_home, "kiln/fix")
    assert json.loads(proc.stdout)["branch"] == "kiln/fix", proc.stderr
    assert git(root, "show", "kiln/fix:calc.py").endswith("a + b\n")  # in the prepared repo
    assert sorted(p.name for p in host_dir.iterdir()) == [], "a prepared command ran on the host"
