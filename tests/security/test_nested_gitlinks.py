"""A nested repository the agent records in the index (`git init sub && git add sub`) would run
its own config — written by the agent — at the user's next plain `git status` on the host
(docs/security.md section 4). Through the real `kiln run --mode yolo` with bubblewrap: a new
repository, one put into a submodule folder the checkout left empty, the user's own untracked
repository reconfigured and staged, a populated submodule's config, and an `index.lock` left
to stop Kiln from writing the index. The observer is the user's `git status` afterwards."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import git
from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

COMMIT = "git -c user.name=a -c user.email=a@b commit -qm c"


def nested(path: str, marker: Path) -> str:
    """Commands that give the repository at ``path`` a config that runs ``marker``'s touch."""
    return (
        f"git -C {path} config core.fsmonitor 'touch {marker}; echo' && "
        f"git -C {path} config filter.ev.clean 'touch {marker}; cat' && "
        f"printf '* filter=ev\\n' > {path}/.gitattributes && echo data > {path}/f.txt && "
        f"git -C {path} add . && git -C {path} {COMMIT.split(' ', 1)[1]} && "
        f"touch -m -d 2030-01-01 {path}/f.txt"
    )


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    # the user's own nested repository, untracked
    (root / "mine").mkdir()
    git(root / "mine", "init", "-q")
    (root / "mine" / "m.txt").write_text("m\n")
    git(root / "mine", "add", "-A")
    git(root / "mine", "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "m")
    # a populated nested repository the checkout records (an embedded git folder)
    (root / "lib").mkdir()
    git(root / "lib", "init", "-q")
    (root / "lib" / "l.txt").write_text("l\n")
    (root / "lib" / "inner").mkdir()  # with a nested repository of its own
    git(root / "lib" / "inner", "init", "-q")
    (root / "lib" / "inner" / "i.txt").write_text("i\n")
    git(root / "lib" / "inner", "add", "-A")
    git(root / "lib" / "inner", "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "i")
    git(root / "lib", "add", "-A")
    git(root / "lib", "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "l")
    git(root, "add", "a.txt", "lib")
    # a submodule the checkout left unpopulated (an empty folder and a gitlink)
    head = git(root / "lib", "rev-parse", "HEAD").strip()
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{head},empty")
    (root / "empty").mkdir()
    (root / ".gitmodules").write_text(
        "".join(f'[submodule "{n}"]\n\tpath = {n}\n\turl = ./{n}\n\tignore = none\n'
                for n in ("sub", "empty", "mine", "lib"))
    )  # fmt: skip
    git(root, "add", ".gitmodules")
    git(root, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "init")
    return root


def run(root: Path, tmp_path: Path, kiln_home: Path, lines: list[str]) -> str:
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": c}}]} for c in lines]
    script = tmp_path / "script.json"
    script.write_text(json.dumps([*steps, "done"]))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="yolo")
    return Path(json.loads(proc.stdout)["transcript"]).read_text()


def users_git_status(root: Path, home: Path) -> None:
    env = {**os.environ, "HOME": str(home)}
    subprocess.run(["git", "status"], cwd=root, env=env, check=True, capture_output=True)


def test_a_recorded_nested_repository_runs_nothing_at_the_users_git_status(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    root = repository(tmp_path)
    marker = host_dir / "nested-ran"
    transcript = run(root, tmp_path, kiln_home, [
        f"git init -q sub && {nested('sub', marker)} && git add sub",
        f"git init -q empty && {nested('empty', marker)}",  # the checkout's empty submodule
        f"{nested('mine', marker)} && git add mine",  # the user's own repository, staged
        f"git -C lib config core.fsmonitor 'touch {marker}; echo'",  # read-only
        f"git -C lib/inner config core.fsmonitor 'touch {marker}; echo'",  # read-only too
        f"git init -q lib/deep && {nested('lib/deep', marker)} && git -C lib add deep",
        # one command: a new nested .git does not outlive the command that made it
        f"git init -q late && {nested('late', marker)} && "
        "git update-index --add --cacheinfo 160000,$(git -C late rev-parse HEAD),late && "
        "touch .git/index.lock",  # left behind so that Kiln cannot take the lock
    ])  # fmt: skip
    assert "sub taken out of the index" in transcript, transcript[-3000:]
    users_git_status(root, tmp_path)
    assert not marker.exists(), "a nested repository's config ran at the user's git status"
    ls = git(root, "ls-files", "-s")
    assert "\tsub\n" not in ls and "\tmine\n" not in ls and "\tlate\n" not in ls
    assert "\tempty\n" in ls and "\tlib\n" in ls  # the checkout's gitlinks stay
    assert not (root / "empty" / ".git").exists()  # made during the run: removed
    assert (root / "mine" / ".git" / "HEAD").is_file()  # the user's repository is kept
    assert (root / "sub" / "f.txt").is_file()  # the agent's files stay, untracked
    assert "fsmonitor" not in (root / "lib" / ".git" / "config").read_text()
    assert "fsmonitor" not in (root / "lib" / "inner" / ".git" / "config").read_text()
    assert "\tdeep\n" not in git(root / "lib", "ls-files", "-s")  # in the nested index too
