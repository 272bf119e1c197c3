"""A partial clone fetches missing objects on demand from its promisor remote, and a config's
`protocol.<name>.allow` outranks the `-c protocol.allow=never` Kiln passes: a repository whose
config names an `ext::` remote and allows `ext` runs that remote's command from any git call that
needs a missing object — `git status` in a nested repository during `kiln run --ci`, the index's
`git log` in a repository whose `.git/config` says so (the file tools no longer write it, even
in yolo; a user's setup or an unconfined command can). Kiln's git calls set
`GIT_ALLOW_PROTOCOL` to nothing (docs/security.md section 8). The marker is looked for outside
/tmp (the sandbox's /tmp is private, and the ext command cannot write it from the sandbox)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import committing_repo, git
from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

# In the sandbox: a nested repository whose HEAD tree is missing, made a partial clone of an
# `ext::` remote, then added to the superproject as a gitlink (so `git status` looks inside).
NESTED = """
import os, subprocess, sys
def g(*a, cwd="sub"):
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", *a], cwd=cwd, check=True)
os.makedirs("sub/d")
g("init", "-q")
open("sub/d/a", "w").write("a\\n")
g("add", "-A")
g("commit", "-qm", "one")
tree = subprocess.run(["git", "rev-parse", "HEAD:d"], cwd="sub", capture_output=True, text=True).stdout.strip()
os.remove(f"sub/.git/objects/{tree[:2]}/{tree[2:]}")
for key, value in (("core.repositoryformatversion", "1"), ("extensions.partialClone", "origin"),
                   ("remote.origin.url", f"ext::sh -c touch% {sys.argv[1]}% >&2"),
                   ("remote.origin.promisor", "true"), ("protocol.ext.allow", "always")):
    g("config", key, value)
g("add", "sub", cwd=".")
"""


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    committing_repo(root)("init", {"calc.py": "def add(a, b):\n    return a - b\n"})
    return root


def test_a_nested_partial_clone_fetches_nothing_from_kilns_ci_git(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    root = repository(tmp_path)
    marker = host_dir / "lazy-fetch-ran"
    steps = [
        {"tool_calls": [{"name": "write_file", "input": {"path": "nested.py", "content": NESTED}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": f"python3 nested.py {marker}"}}]},
        "done",
    ]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
                    extra=("--ci", "--commit-branch", "kiln/lazy"))  # fmt: skip
    transcript = Path(json.loads(proc.stdout)["transcript"]).read_text()
    assert "sub taken out of the index" in transcript, proc.stderr  # it ran, and (section 4)
    assert "removed sub/.git" in transcript, proc.stderr  # its .git went with the command
    # the gitlink it recorded was taken out of the index when the command ended (section 4)
    assert "160000" not in git(root, "ls-files", "-s", "sub"), proc.stderr
    subprocess.run(["git", "status"], cwd=root, capture_output=True, check=True,
                   env={**os.environ, "HOME": str(tmp_path)})  # fmt: skip
    assert not marker.exists(), "a nested repository's promisor remote ran a command on the host"
    assert json.loads(proc.stdout)["branch"] == "kiln/lazy"  # and the run's outputs were made


def test_the_indexs_git_log_fetches_nothing_with_a_promisor_remote_in_git_config(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    root = repository(tmp_path)
    marker = host_dir / "history-fetch-ran"
    config = (root / ".git" / "config").read_text() + (
        "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n"
        f'[remote "origin"]\n\turl = ext::sh -c touch% {marker}% >&2\n\tpromisor = true\n'
        '[protocol "ext"]\n\tallow = always\n'
    )
    # a new commit whose tree is then removed: the index's next `git log` needs it
    commit = (
        "mkdir -p d && echo x > d/x && git add d && "
        "git -c user.name=a -c user.email=a@b commit -qm 'add x' && "
        "t=$(git rev-parse HEAD^{tree}) && rm -f .git/objects/$(echo $t | cut -c1-2)/$(echo $t | cut -c3-)"
    )
    (root / ".git" / "config").write_text(config)
    steps = [
        {"tool_calls": [{"name": "search_code", "input": {"query": "add numbers"}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": commit}}]},
        "done",
    ]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="yolo")
    assert "partialClone" in (root / ".git" / "config").read_text(), proc.stderr  # it ran
    assert "add x" in git(root, "log", "--format=%s", "-1")
    # the next session's index (`kiln index`, the editor's watcher) reads the new commit
    index = subprocess.run(
        [sys.executable, "-m", "lsp_server", "index", "--json"], cwd=root, capture_output=True,
        text=True, env={**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home)},
    )  # fmt: skip
    assert index.returncode == 0, index.stderr
    assert not marker.exists(), "the repository's promisor remote ran a command on the host"
