"""Temp files of writes killed under `$KILN_HOME` are swept, as the lockfile's are.

Every file Kiln keeps there (`trusted_keys.json`, `credentials.json`, the cache's archives and
documents) is written to `.NAME.PID.xxxxxxxx.tmp` and renamed over. A `kiln` process killed
between the two left the temp for good: a pinned key's, a token's (a secret), an archive's of
up to the archive limit. Now the next write into the same folder removes every such temp an
hour old (a younger one may be another command's write in progress)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.registry.conftest import FIXTURES, LiveRegistry, cli_env, kiln, ok, publish_skill

# Runs `kiln` itself; the process SIGKILLs itself just before renaming a temp over the file
# its first argument names (a folder's name: any file in that folder).
KILL_BEFORE_RENAME = """
import os, runpy, signal, sys
target = sys.argv.pop(1)
real_replace = os.replace
def replace(src, dst, *args, **kwargs):
    if target in (os.path.basename(str(dst)), os.path.basename(os.path.dirname(str(dst)))):
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(src, dst, *args, **kwargs)
os.replace = replace
sys.argv = ["kiln", *sys.argv[1:]]
runpy.run_module("lsp_server", run_name="__main__")
"""


def _killed(target: str, *args: str, env: dict[str, str], cwd: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", KILL_BEFORE_RENAME, target, *args],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == -signal.SIGKILL, run.stderr


def _aged(path: Path) -> Path:
    os.utime(path, (path.stat().st_mtime - 7200,) * 2)
    return path


def test_temps_of_killed_writes_under_kiln_home_are_swept(
    live: LiveRegistry, tmp_path: Path
) -> None:
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = cli_env(home, KILN_REGISTRY=live.url)
    key = httpx.get(f"{live.url}/.well-known/kiln-registry.json").json()["keys"][0]["publicKey"]

    _killed("trusted_keys.json", "skills", "trust", live.url, "--key", key, env=env, cwd=project)
    assert not (home / "trusted_keys.json").exists()  # never half a file
    (pin_temp,) = home.glob(".trusted_keys.json.*.tmp")
    _aged(pin_temp)
    token_temp = home / ".credentials.json.4242.0123abcd.tmp"  # a killed login's
    token_temp.write_text('{"http://x": {"token": "kiln_secret"}}')
    _aged(token_temp)
    young = home / ".credentials.json.4243.0123abcd.tmp"  # another command writing right now
    young.write_text("{}")
    mine = home / "notes.4242.0123abcd.tmp"  # no leading dot: not a name Kiln writes
    mine.write_text("x")
    _aged(mine)

    _killed("blobs", "skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project)
    blobs = home / "cache" / "blobs"
    (blob_temp,) = blobs.glob(".*.tmp")
    _aged(blob_temp)
    other = blobs / f".{'0' * 64}.4242.0123abcd.tmp"  # an archive never written again
    other.write_bytes(b"\x1f\x8b")
    _aged(other)

    ok(kiln("skills", "trust", live.url, "--key", key, env=env, cwd=project))
    assert not pin_temp.exists() and not token_temp.exists()
    assert young.exists() and mine.exists()
    ok(kiln("skills", "install", "acme/brand-guidelines", "--yes", env=env, cwd=project))
    assert sorted(p.name for p in blobs.iterdir() if p.name.endswith(".tmp")) == []
    assert len(list(blobs.iterdir())) == 1


def test_a_killed_write_of_the_users_memory_file_leaves_no_temp_for_good(tmp_path: Path) -> None:
    """`kiln memory add --user` writes `$KILN_HOME/KILN.md` through `.KILN.md.xxxxxxxx.kiln-tmp`;
    a kill before the rename left that temp, the note in it, for good."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = cli_env(home)
    ok(kiln("memory", "add", "first note", "--user", env=env, cwd=project))
    _killed("KILN.md", "memory", "add", "a secret note", "--user", env=env, cwd=project)
    (left,) = home.glob(".KILN.md.*.kiln-tmp")
    assert "a secret note" in left.read_text()
    _aged(left)
    young = home / ".KILN.md.abcd_123.kiln-tmp"  # another write in progress
    young.write_text("x")
    ok(kiln("memory", "add", "third note", "--user", env=env, cwd=project))
    assert not left.exists() and young.exists()
    text = (home / "KILN.md").read_text()
    assert "first note" in text and "third note" in text and "a secret note" not in text
