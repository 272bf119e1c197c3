"""`kiln skills install` killed with SIGKILL in the middle of swapping a skill into place.

A real `kiln` process updates an installed skill; the kill lands right after the installed
folder was first moved (what the swap does first). Before: the swap was two renames (old tree
out, new tree in), and a SIGKILL between them left no skill folder at all, only a hidden
`.old-NAME-…` that discovery skips: the skill vanished until someone installed it again. Now
the two folders are exchanged in one `renameat2(RENAME_EXCHANGE)` where the system has it, so
the folder holds the old version or the new one, whole, at every instant.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from skills_registry.archive import read_dir
from tests.registry.conftest import (
    FIXTURES,
    LiveRegistry,
    cli_env,
    kiln,
    publish_skill,
)

# Runs `kiln` itself; only the timing of the kill is ours: the process SIGKILLs itself right
# after the first rename or exchange that moves the installed folder.
KILL_AFTER_FIRST_SWAP = """
import ctypes, os, runpy, signal, sys
real_rename = os.rename
def rename(src, dst, *args, **kwargs):
    real_rename(src, dst, *args, **kwargs)
    if os.path.basename(str(src)) == "brand-guidelines":
        os.kill(os.getpid(), signal.SIGKILL)
os.rename = rename
libc = ctypes.CDLL(None, use_errno=True)
if hasattr(libc, "renameat2"):
    real_renameat2 = libc.renameat2
    class Libc:
        def __getattr__(self, name):
            return getattr(libc, name)
        def renameat2(self, *args):
            result = real_renameat2(*args)
            os.kill(os.getpid(), signal.SIGKILL)
            return result
    import skills_registry.skill_folder as folder
    folder._LIBC = Libc()
sys.argv = ["kiln", *sys.argv[1:]]
runpy.run_module("lsp_server", run_name="__main__")
"""


def test_a_kill_during_the_swap_leaves_a_whole_skill(live: LiveRegistry, tmp_path: Path) -> None:
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    changed = tmp_path / "v2" / "brand-guidelines"
    shutil.copytree(FIXTURES / "brand-guidelines", changed)
    (changed / "NOTES.md").write_text("new in 1.1.0\n")
    publish_skill(live, changed, "1.1.0")
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = cli_env(home, KILN_REGISTRY=live.url)
    first = kiln("skills", "install", "acme/brand-guidelines@1.0.0", "--yes", env=env, cwd=project)
    assert first.returncode == 0, first.stderr
    target = project / ".kiln/skills/brand-guidelines"
    old = read_dir(target).files

    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_FIRST_SWAP, "skills", "install",
         "acme/brand-guidelines@1.1.0", "--yes"],
        env=env, cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert target.is_dir(), sorted(p.name for p in target.parent.iterdir())
    now = {k: v for k, v in read_dir(target).files.items() if k != ".kiln-install.json"}
    old = {k: v for k, v in old.items() if k != ".kiln-install.json"}
    new = {k: v for k, v in read_dir(changed).files.items()}
    assert now in (old, new)

    again = kiln("skills", "install", "acme/brand-guidelines@1.1.0", "--yes", env=env, cwd=project)
    assert again.returncode == 0, again.stderr
    assert (target / "NOTES.md").read_text() == "new in 1.1.0\n"


KILL_AFTER_FIRST_UNLINK = """
import os, runpy, signal, sys
real_unlink = os.unlink
def unlink(path, *args, **kwargs):
    real_unlink(path, *args, **kwargs)
    if kwargs.get("dir_fd") is not None or "brand-guidelines" in str(path):  # rmtree's, in the skill
        os.kill(os.getpid(), signal.SIGKILL)
os.unlink = unlink
sys.argv = ["kiln", *sys.argv[1:]]
runpy.run_module("lsp_server", run_name="__main__")
"""


def test_a_kill_during_remove_leaves_the_skill_whole_or_gone(
    live: LiveRegistry, tmp_path: Path
) -> None:
    """Before: `remove` deleted the folder file by file in place, so a kill left a skill with
    some files gone: first its `.kiln-install.json`, after which the rest reads as a local,
    first-party skill instead of third-party content. Now the folder is moved aside in
    one rename first and the lock entry dropped before any file is deleted. The leftover was
    kept until the next install of that same skill, and then only once an hour old (a skill
    of up to 32 MB, for good), and the lockfile still named the removed skill, so `install
    --frozen` brought it back; now the next skills command of the scope sweeps it."""
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = cli_env(home, KILN_REGISTRY=live.url)
    first = kiln("skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project)
    assert first.returncode == 0, first.stderr
    target = project / ".kiln/skills/brand-guidelines"
    before = _files(target)
    assert ".kiln-install.json" in before

    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_FIRST_UNLINK, "skills", "remove",
         "acme/brand-guidelines"],
        env=env, cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not target.exists() or _files(target) == before
    assert "acme/brand-guidelines" not in (project / "skills-lock.json").read_text()

    verify = kiln("skills", "verify", env=env, cwd=project)
    assert verify.returncode == 0, verify.stderr
    assert sorted(p.name for p in target.parent.iterdir()) == []


def _files(root: Path) -> dict[str, bytes]:
    """Every file, the install marker included (a skill without it reads as a local one)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


KILL_BEFORE_LOCKFILE_RENAME = """
import os, runpy, signal, sys
real_replace = os.replace
def replace(src, dst, *args, **kwargs):
    if os.path.basename(str(dst)) == "skills-lock.json":
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(src, dst, *args, **kwargs)
os.replace = replace
sys.argv = ["kiln", *sys.argv[1:]]
runpy.run_module("lsp_server", run_name="__main__")
"""


def test_a_kill_while_the_lockfile_is_written_leaves_no_temp_file_for_good(
    live: LiveRegistry, tmp_path: Path
) -> None:
    """The lockfile is written to a temp file and renamed over, so a kill leaves it whole; the
    temp file stayed in the project's root for good (`.skills-lock.json.PID.xxxxxxxx.tmp`, which
    `git add .` commits). Now the next command that writes the lockfile removes it once it is
    an hour old (a younger one may be another install's write in progress)."""
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = cli_env(home, KILN_REGISTRY=live.url)
    killed = subprocess.run(
        [sys.executable, "-c", KILL_BEFORE_LOCKFILE_RENAME, "skills", "install",
         "acme/brand-guidelines", "--yes"],
        env=env, cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (project / "skills-lock.json").exists()  # never half a lockfile
    (left,) = project.glob(".skills-lock.json.*.tmp")
    os.utime(left, (left.stat().st_mtime - 7200,) * 2)
    young = project / ".skills-lock.json.1.0123abcd.tmp"  # another install writing right now
    young.write_text("{}")

    again = kiln("skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project)
    assert again.returncode == 0, again.stderr
    assert not left.exists() and young.exists()
    assert "acme/brand-guidelines" in (project / "skills-lock.json").read_text()


KILL_AFTER_PLACING = """
import os, runpy, signal, sys
from pathlib import Path
real_rename = Path.rename
def rename(self, dst):
    moved = real_rename(self, dst)
    if Path(dst).name == "brand-guidelines":
        os.kill(os.getpid(), signal.SIGKILL)
    return moved
Path.rename = rename
sys.argv = ["kiln", *sys.argv[1:]]
runpy.run_module("lsp_server", run_name="__main__")
"""


def test_a_first_install_killed_before_its_lockfile_write_fails_verify(
    live: LiveRegistry, tmp_path: Path
) -> None:
    """A first install killed after moving the skill into place and before writing the
    lockfile left a whole, usable third-party skill that no lock entry pins, and `verify` said
    `nothing to verify` (exit 0). Now it fails naming the folder and the install recording it."""
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = cli_env(home, KILN_REGISTRY=live.url)
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_PLACING, "skills", "install",
         "acme/brand-guidelines", "--yes"],
        env=env, cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    target = project / ".kiln" / "skills" / "brand-guidelines"
    assert (target / "SKILL.md").is_file() and not (project / "skills-lock.json").exists()

    verify = kiln("skills", "verify", env=env, cwd=project)
    assert verify.returncode == 5, (verify.stdout, verify.stderr)
    assert verify.stdout == (
        f"FAIL acme/brand-guidelines@1.0.0  installed in {target} but not in the lockfile (an "
        "install stopped before writing it); `kiln skills install acme/brand-guidelines@1.0.0` "
        "records it\n"
    )
    assert (
        verify.stderr.strip()
        .splitlines()[-1]
        .startswith("kiln: 1 skill(s) failed verification: acme/brand-guidelines")
    )
    again = kiln("skills", "install", "acme/brand-guidelines@1.0.0", "--yes", env=env, cwd=project)
    assert again.returncode == 0, again.stderr
    verify = kiln("skills", "verify", env=env, cwd=project)
    assert verify.returncode == 0 and verify.stdout.startswith("ok   acme/brand-guidelines@1.0.0")
