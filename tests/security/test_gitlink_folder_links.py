"""A submodule the checkout left unpopulated is an empty folder and a gitlink; a ``.git`` a
command puts there is removed when the command ends (``agent.sandbox.gitlinks``), on the host.
A command that swapped the folder for a link to one of the user's repositories outside the
workspace (`rmdir lib && ln -s ~/other lib`) had that repository's whole ``.git`` deleted by
that clean-up: it followed the link out. Now the link is removed, and the repository outside is
untouched (docs/security.md section 4). Through the real `kiln run --mode yolo` with bubblewrap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import git
from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def commit(repo: Path) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "c")
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_submodule_folder_turned_into_a_link_leaves_the_repository_it_names_alone(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    other = host_dir / "other"  # the user's own repository, outside the workspace
    other.mkdir()
    git(other, "init", "-q")
    (other / "o.txt").write_text("o\n")
    head = commit(other)
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{head},lib")
    (root / "lib").mkdir()  # unpopulated: an empty folder
    (root / ".gitmodules").write_text('[submodule "lib"]\n\tpath = lib\n\turl = ./lib\n')
    git(root, "add", ".gitmodules")
    git(root, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "init")
    command = f"rmdir lib && ln -s {other} lib && echo linked"
    script = tmp_path / "script.json"
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
    script.write_text(json.dumps(steps))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="yolo")
    transcript = Path(json.loads(proc.stdout)["transcript"]).read_text()
    assert "linked" in transcript, transcript  # the command ran
    assert (other / ".git" / "HEAD").is_file(), transcript  # the user's repository is whole
    assert git(other, "rev-parse", "HEAD").strip() == head
    assert not (root / "lib").is_symlink()  # the link the command made is gone, and said
    assert "lib (a link) removed" in transcript, transcript
