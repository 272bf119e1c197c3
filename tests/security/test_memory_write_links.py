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
