"""`kiln skills install` when the disk refuses a write, through a real process.

A file-size limit (`RLIMIT_FSIZE`, which Python turns into `EFBIG` on write) stands in for a
full disk: the skill's 300 KB file cannot be written, while the small archive, the cached
documents and the lockfile can. Before, the install ended in a Python traceback; it is now one
line and a non-zero exit, with the project as it was: no new folder, no temp folder, the
previous version in place and the lockfile unchanged. An umask of 0 (a careless shell, some
container images) no longer makes the installed skill's folders world-writable.
"""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

from tests.registry.conftest import (
    LiveRegistry,
    cli_env,
    make_skill,
    publish_skill,
    tree_snapshot,
)

LIMIT = 100 * 1024  # bytes any one written file may reach


def _install(env: dict[str, str], cwd: Path, url: str, *, limited: bool = False, umask: int = 0o22):
    def setup() -> None:
        os.umask(umask)
        if limited:
            resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))

    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "skills", "install", "acme/notes", "--yes",
         "--registry", url],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=120, preexec_fn=setup,
    )  # fmt: skip


def test_a_write_the_disk_refuses_is_one_line_and_changes_nothing(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    small = make_skill(tmp_path / "one", "notes", body="# Notes\n")
    big = make_skill(tmp_path / "two", "notes", body="# Notes\n", extra={"data.txt": "x" * 300_000})
    env = cli_env(tmp_path / "home")

    publish_skill(registry, big, "0.9.0")
    fresh = _install(env, project, registry.url, limited=True)
    assert fresh.returncode != 0, fresh.stdout
    assert "Traceback" not in fresh.stderr and fresh.stderr.count("\n") == 1, fresh.stderr
    assert "cannot write" in fresh.stderr and "File too large" in fresh.stderr
    assert tree_snapshot(project / ".kiln" / "skills") == {}  # no skill, no temp folder
    assert not (project / "skills-lock.json").exists()

    publish_skill(registry, small, "1.0.0")
    assert _install(env, project, registry.url).returncode == 0
    skills, lock = project / ".kiln" / "skills", project / "skills-lock.json"
    before, lock_before = tree_snapshot(skills), lock.read_text()
    publish_skill(registry, big, "1.1.0")
    update = _install(env, project, registry.url, limited=True)
    assert update.returncode != 0 and "Traceback" not in update.stderr, update.stderr
    assert update.stderr.count("\n") == 1
    assert tree_snapshot(skills) == before and lock.read_text() == lock_before

    done = _install(env, project, registry.url)  # room again: the update goes through
    assert done.returncode == 0, done.stderr
    assert (skills / "notes" / "data.txt").stat().st_size == 300_000


def test_an_installed_skill_is_not_writable_by_others_whatever_the_umask(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    folder = make_skill(
        tmp_path / "src", "notes", extra={"scripts/run.sh": "echo hi\n", "ref/deep/a.md": "a\n"}
    )
    (folder / "scripts" / "run.sh").chmod(0o777)
    publish_skill(registry, folder, "1.0.0")
    result = _install(cli_env(tmp_path / "home"), project, registry.url, umask=0)
    assert result.returncode == 0, result.stderr
    root = project / ".kiln" / "skills" / "notes"
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert not mode & 0o022, f"{path.relative_to(project)} is {oct(mode)}"
    assert stat.S_IMODE((root / "scripts" / "run.sh").stat().st_mode) == 0o755
