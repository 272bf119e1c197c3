"""An installed project skill's folder is in the workspace, where any command can add to it:
a link, or a sparse file of 40 GB that takes no room on disk. `kiln skills verify`, `install`
and `publish` (real processes, memory capped at 2 GB as a CI runner's would be) read the folder
to hash it."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from tests.registry.conftest import FIXTURES, LiveRegistry, cli_env, publish_skill


def _capped(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args], env=env, cwd=cwd, capture_output=True,
        text=True, timeout=120, preexec_fn=cap,
    )  # fmt: skip


def test_a_huge_sparse_file_is_one_line_not_a_memory_error(
    live: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    """Before: every byte was read first (`internal error: MemoryError` and a crash file);
    now the size is checked before reading."""
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=live.url)
    assert _capped("skills", "install", "acme/brand-guidelines", "--yes", env=env,
                   cwd=project).returncode == 0  # fmt: skip
    folder = project / ".kiln" / "skills" / "brand-guidelines"
    with (folder / "big.bin").open("wb") as handle:
        handle.truncate(40 << 30)
    limit = f"big.bin is {40 << 30} bytes; the limit is {8 << 20}"
    verify = _capped("skills", "verify", env=env, cwd=project)
    assert verify.returncode == 5 and limit in verify.stdout, verify.stdout + verify.stderr
    again = _capped("skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project)
    assert again.returncode != 0 and again.stderr.startswith(
        f"kiln: acme/brand-guidelines at {folder} was modified locally ({limit})"
    ), again.stderr
    published = _capped("skills", "publish", str(folder), "--token", "t", env=env, cwd=project)
    assert published.returncode != 0 and limit in published.stderr, published.stderr
    for proc in (verify, again, published):
        assert "internal error" not in proc.stderr and len(proc.stderr.splitlines()) <= 2
    forced = _capped("skills", "install", "acme/brand-guidelines", "--yes", "--force",
                     env=env, cwd=project)  # fmt: skip
    assert forced.returncode == 0, forced.stderr
    assert not (folder / "big.bin").exists()


def test_a_link_added_to_an_installed_skill_reads_as_a_local_change(
    live: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    """Before: `kiln: link: only regular files can be packed … (build the archive with `kiln
    skills publish PATH`)`, a packing hint for an install."""
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=live.url)
    assert _capped("skills", "install", "acme/brand-guidelines", "--yes", env=env,
                   cwd=project).returncode == 0  # fmt: skip
    folder = project / ".kiln" / "skills" / "brand-guidelines"
    os.symlink("/etc/hostname", folder / "link")
    again = _capped("skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project)
    assert again.returncode != 0
    assert again.stderr.startswith(
        f"kiln: acme/brand-guidelines at {folder} was modified locally (link: only regular"
    ), again.stderr
    assert "kiln skills publish" not in again.stderr
