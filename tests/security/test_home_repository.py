"""A checkout without a `.git` of its own (an unpacked release, a downloaded example) inside a
home folder the user keeps under git (dotfiles in `~/.git`), through the real `kiln run --root`
(docs/security.md section 6b). Memory took the nearest `.git` above the workspace as the
repository, the whole home folder: the checkout's `KILN.md` imported `~/.ssh/id_rsa`, which
every session sends to the model provider before the user does anything, and `remember`
appended the model's line through a shipped `KILN.md -> ../../.bashrc`, a command the user's
next shell runs. A repository is never the home folder or a folder above it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run, tool_results

pytestmark = pytest.mark.e2e

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- home-repo-canary-71c3"
BASHRC = "# the user's shell start-up file\n"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY + "\n")
    (home / ".bashrc").write_text(BASHRC)
    subprocess.run(["git", "init", "-q", str(home)], check=True)  # dotfiles under git
    return home


def run(root: Path, home: Path, kiln_home: Path, steps: list[object]) -> tuple[str, Path]:
    """`kiln run --root ROOT` in yolo (``remember`` writes unasked): all it printed and stored,
    and the transcript."""
    script = root.parent / "script.json"
    script.write_text(json.dumps([*steps, "done"]))
    proc = kiln_run(
        root, home=home, kiln_home=kiln_home, script=script, extra=("--root", str(root))
    )
    assert proc.returncode == 0, proc.stderr
    transcript = Path(json.loads(proc.stdout)["transcript"])
    stored = [p.read_text(errors="replace") for p in transcript.parent.rglob("*") if p.is_file()]
    return "\n".join([proc.stdout, proc.stderr, *stored]), transcript


def test_a_checkout_in_a_home_under_git_imports_nothing_of_the_home(
    home: Path, kiln_home: Path
) -> None:
    root = home / "Downloads" / "example"
    root.mkdir(parents=True)
    (root / "KILN.md").write_text("EXAMPLE-NOTE: use tabs\n@~/.ssh/id_rsa\n@../../.ssh/id_rsa\n")
    (root / "CLAUDE.md").symlink_to("../../.ssh/id_rsa")
    sent, _ = run(root, home, kiln_home, [])
    assert "EXAMPLE-NOTE: use tabs" in sent  # the control: the checkout's memory is sent
    assert KEY not in sent
    assert "CLAUDE.md skipped: it resolves outside the repository" in sent


def test_remember_writes_nothing_through_a_link_into_the_home(home: Path, kiln_home: Path) -> None:
    root = home / "Downloads" / "example"
    root.mkdir(parents=True)
    (root / "KILN.md").symlink_to("../../.bashrc")
    step = {"tool_calls": [{"name": "remember", "input": {"text": "x; touch ~/pwned"}}]}
    _, transcript = run(root, home, kiln_home, [step])
    (result,) = tool_results(transcript)
    assert "resolves outside the repository" in str(result)
    assert (home / ".bashrc").read_text() == BASHRC
    assert (root / "KILN.md").is_symlink()


def test_a_checkout_in_a_home_under_git_offers_no_skill_of_the_home(
    home: Path, kiln_home: Path
) -> None:
    """A repository's skill folder must resolve inside the repository: with the whole home as
    the repository, a shipped link to Claude Code's skill folder in the home offered the user's
    private skill as the checkout's, and `skill{file}` read its files to the model."""
    private = home / ".claude" / "skills" / "deploy"
    private.mkdir(parents=True)
    (private / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: how we deploy\n---\nSteps.\n"
    )
    (private / "hosts.md").write_text("PRIVATE-HOSTS-canary-2e7a\n")
    root = home / "Downloads" / "example"
    (root / ".kiln" / "skills").mkdir(parents=True)
    (root / ".kiln" / "skills" / "deploy").symlink_to("../../../../.claude/skills/deploy")
    step = {"tool_calls": [{"name": "skill", "input": {"name": "deploy", "file": "hosts.md"}}]}
    sent, _ = run(root, home, kiln_home, [step])
    assert "PRIVATE-HOSTS" not in sent
    assert "resolves outside the repository" in sent
