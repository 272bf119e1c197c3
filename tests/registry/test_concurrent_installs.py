"""Two `kiln skills install` processes in one scope take turns: the folder and the lockfile agree.

Before, each install read the lockfile, placed its folder and wrote its entry on its own; one
that reached its lockfile write after another's swap recorded a version the folder no longer
held. An install now holds the scope's lock from reading the lockfile to writing it, and the
second says it is waiting. Here the first holds it at its review prompt (a real terminal),
so the turn-taking is shown by a condition, never by timing.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill, publish_skill
from tests.waiting import wait_until


def _drain(stream: int, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        while chunk := os.read(stream, 4096):
            into.append(chunk)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _install(spec: str, env: dict[str, str], cwd: Path, stdin: int, *extra: str):  # type: ignore[no-untyped-def]
    return subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "skills", "install", spec, *extra],
        env=env, cwd=cwd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip


def test_a_second_install_waits_for_the_first(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    for version, body in (("1.0.0", "one"), ("1.1.0", "two")):
        publish_skill(registry, make_skill(tmp_path / version, "notes", body=body), version)
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)
    key = httpx.get(f"{registry.url}/.well-known/kiln-registry.json").json()["keys"][0]
    assert kiln("skills", "trust", registry.url, "--key", key["publicKey"],
                env=env, cwd=project).returncode == 0  # fmt: skip

    master, slave = pty.openpty()
    first = _install("acme/notes@1.0.0", env, project, slave)
    os.close(slave)
    first_err: list[bytes] = []
    assert first.stderr is not None
    _drain(first.stderr.fileno(), first_err)
    second = None
    try:
        assert wait_until(lambda: b"Install this skill?" in b"".join(first_err)), first_err
        second = _install("acme/notes@1.1.0", env, project, subprocess.DEVNULL, "--yes")
        second_err: list[bytes] = []
        assert second.stderr is not None
        reader = _drain(second.stderr.fileno(), second_err)
        assert wait_until(lambda: b"waiting for another" in b"".join(second_err)), (
            second.poll(),
            second_err,
            (project / "skills-lock.json").exists(),
        )
        assert second.poll() is None
        os.write(master, b"y\n")
        assert first.wait(timeout=120) == 0, b"".join(first_err)
        assert second.wait(timeout=120) == 0, b"".join(second_err)
        reader.join(timeout=10)
    finally:
        os.close(master)
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()

    locked = json.loads((project / "skills-lock.json").read_text())["skills"]["acme/notes"]
    folder = project / ".kiln" / "skills" / "notes"
    marker = json.loads((folder / ".kiln-install.json").read_text())
    assert locked["version"] == marker["version"] == "1.1.0"  # the later install, both agree
    assert "two" in (folder / "SKILL.md").read_text()
    assert kiln("skills", "verify", env=env, cwd=project).returncode == 0
