"""The Action makes the sandbox usable before Kiln's step. GitHub's `ubuntu-latest` (24.04) keeps
unprivileged processes from making the user namespaces bubblewrap needs (AppArmor), and an
image may lack bubblewrap: the Action ran Kiln all the same, which then refused every command
(and, with `verify`, ended at once with exit 2). action/sandbox.sh installs bubblewrap where it
is missing and lifts the restriction; the script runs for real here, with a stand-in apt-get
and a stand-in for the kernel setting."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def tools(tmp_path: Path, *, bwrap: bool) -> Path:
    """A PATH holding what the script needs, an apt-get that records its call, and bwrap or not."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "sh", "cat", "id", "uname", "env"):
        (bin_dir / name).symlink_to(shutil.which(name) or f"/bin/{name}")
    apt = bin_dir / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "apt.log"}\n')
    apt.chmod(0o755)
    if bwrap:
        (bin_dir / "bwrap").symlink_to(shutil.which("true") or "/bin/true")
    return bin_dir


def run_script(
    tmp_path: Path, *, bwrap: bool, restricted: str, runner: str = "github-hosted"
) -> subprocess.CompletedProcess:
    setting = tmp_path / "apparmor_restrict_unprivileged_userns"
    setting.write_text(restricted)
    env = {"PATH": str(tools(tmp_path, bwrap=bwrap)), "KILN_USERNS_SETTING": str(setting),
           "RUNNER_ENVIRONMENT": runner}  # fmt: skip
    return subprocess.run(["bash", str(REPO / "action" / "sandbox.sh")], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


@pytest.mark.skipif(os.getuid() != 0, reason="the script changes the setting as root or by sudo")
def test_a_runner_without_a_working_sandbox_gets_one(tmp_path: Path) -> None:
    proc = run_script(tmp_path, bwrap=False, restricted="1\n")
    assert proc.returncode == 0, proc.stderr
    assert "install -y -qq bubblewrap" in (tmp_path / "apt.log").read_text()
    assert (tmp_path / "apparmor_restrict_unprivileged_userns").read_text().strip() == "0"


def test_a_runner_whose_sandbox_works_is_left_alone(tmp_path: Path) -> None:
    proc = run_script(tmp_path, bwrap=True, restricted="0\n")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "apt.log").exists() and proc.stdout == ""
    assert (tmp_path / "apparmor_restrict_unprivileged_userns").read_text() == "0\n"


def test_a_self_hosted_runner_is_told_not_changed(tmp_path: Path) -> None:
    """A self-hosted runner is someone's machine that outlives the job: its settings stay."""
    proc = run_script(tmp_path, bwrap=False, restricted="1\n", runner="self-hosted")
    assert proc.returncode == 0
    assert not (tmp_path / "apt.log").exists()
    assert (tmp_path / "apparmor_restrict_unprivileged_userns").read_text() == "1\n"
    assert (
        "run as root: apt-get update" in proc.stderr and "Kiln will refuse commands" in proc.stderr
    )


def test_action_yml_runs_it_before_kiln_on_linux() -> None:
    import yaml

    steps = yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"]
    at = next(i for i, s in enumerate(steps) if "action/sandbox.sh" in s.get("run", ""))
    assert steps[at]["if"] == "runner.os == 'Linux'"
    assert at < next(i for i, s in enumerate(steps) if s.get("id") == "kiln")
