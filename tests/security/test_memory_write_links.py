"""A repository's memory file that is a link out of it, written to (docs/security.md section
6b). Reading it is refused; but `remember` and `kiln memory add` read the old text to append
to, and the write then replaced the link: a shipped `KILN.md -> ~/.ssh/id_rsa` had the key
copied into the workspace's `KILN.md`, a regular file every later session sends to the model
provider. Through the real `kiln run` (yolo, where `remember` writes unasked) and `kiln memory
add`; a FIFO there held both forever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run_json, tool_results

pytestmark = pytest.mark.e2e

CANARY = "-----BEGIN OPENSSH PRIVATE KEY----- CANARY-9d41"


@pytest.fixture
def repo(tmp_path: Path, host_dir: Path) -> Path:
    key = host_dir / ".ssh" / "id_rsa"
    key.parent.mkdir()
    key.write_text(CANARY + "\n")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "KILN.md").symlink_to(key)
    return root


def _no_copy(root: Path, out_text: str) -> None:
    assert (root / "KILN.md").is_symlink()  # left as shipped, nothing read through it
    regular = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert not any(CANARY in p.read_text() for p in regular)
    assert CANARY not in out_text


def test_remember_does_not_copy_what_a_shipped_link_names(
    repo: Path, tmp_path: Path, kiln_home: Path
) -> None:
    step = {"tool_calls": [{"name": "remember", "input": {"text": "tests run with make"}}]}
    proc, out = kiln_run_json(
        repo, [step], home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    (result,) = tool_results(Path(out["transcript"]))
    assert "resolves outside the repository" in result
    _no_copy(repo, proc.stdout + Path(out["transcript"]).read_text())


def test_kiln_memory_add_refuses_a_link_out_and_a_fifo(
    repo: Path, tmp_path: Path, kiln_home: Path
) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home)}
    add = [sys.executable, "-m", "lsp_server", "memory", "add", "tests run with make"]
    proc = subprocess.run(add, cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("kiln: KILN.md resolves outside the repository")
    _no_copy(repo, proc.stdout + proc.stderr)
    (repo / "KILN.md").unlink()
    os.mkfifo(repo / "KILN.md")  # 60 s bounds a hang: not a speed assertion
    proc = subprocess.run(add, cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "not a regular file" in proc.stderr


@pytest.mark.parametrize("hooks", [".git/hooks", ".githooks"])
def test_remember_writes_no_git_hook_a_shipped_link_names(
    tmp_path: Path, kiln_home: Path, host_dir: Path, hooks: str
) -> None:
    """A `KILN.md -> .git/hooks/post-commit` resolves inside the repository, so the check above
    let it through; but git runs that hook on the host at the user's next commit (Git LFS installs
    one, and a user's own hook need not end in `exec`), and `remember` appended the model's line to it, its
    executable bit kept. The file tools never write into `.git` (section 2); neither does memory."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    if hooks != ".git/hooks":  # `core.hooksPath`: the folder is a workspace folder
        subprocess.run(["git", "config", "core.hooksPath", hooks], cwd=root, check=True)
        (root / hooks).mkdir()
    hook = root / hooks / "post-commit"
    hook.write_text("#!/bin/sh\necho committed >/dev/null\n")  # the user's own hook
    hook.chmod(0o755)
    (root / "KILN.md").symlink_to(f"{hooks}/post-commit")
    marker = host_dir / "hook-ran"
    step = {"tool_calls": [{"name": "remember", "input": {"text": f"x; touch {marker}"}}]}
    proc, out = kiln_run_json(
        root, [step], home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    (result,) = tool_results(Path(out["transcript"]))
    assert str(marker) not in hook.read_text(), result
    assert "git" in result
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "user"], cwd=root, env=env)
    assert not marker.exists()
