"""`git credential-cache` keeps the passwords git was given in a daemon that answers whoever
reaches its socket (`~/.cache/git/credential/socket`, or `$XDG_CACHE_HOME/git/credential/socket`,
or the older `~/.git-credential-cache/socket`). A Unix socket is reachable from any network
namespace, and a sandboxed command got the user's cached password back with `git
credential-cache get`. Through the real `kiln run --mode ci` (commands run unasked): the socket
is hidden now, wherever the cache folder is (docs/security.md section 4)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import one_command

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

CANARY = "hunter2-cache-canary-4e1b"
ASK = "protocol=https\nhost=example.com\n\n"
GET = "printf 'protocol=https\\nhost=example.com\\n\\n' | git credential-cache get; echo asked\n"


def cache_env(home: Path, cache: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "XDG_CACHE"))}
    env["HOME"] = str(home)
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    return env


@pytest.fixture(params=["default", "xdg", "old"])
def cached(request: pytest.FixtureRequest, host_dir: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A home whose git credential cache holds a password: (home, environment)."""
    home = host_dir / "home"
    home.mkdir()
    cache = host_dir / "xdg-cache" if request.param == "xdg" else None
    if request.param == "old":
        (home / ".git-credential-cache").mkdir(mode=0o700)
    env = cache_env(home, cache)
    stored = f"{ASK[:-1]}username=u\npassword={CANARY}\n\n"
    subprocess.run(["git", "-c", "credential.helper=cache", "credential", "approve"],
                   input=stored, text=True, env=env, check=True, timeout=20)  # fmt: skip
    got = subprocess.run(["git", "credential-cache", "get"], input=ASK, text=True, env=env,
                         capture_output=True, timeout=20).stdout  # fmt: skip
    assert CANARY in got  # the cache answers on the host
    yield home, env
    subprocess.run(["git", "credential-cache", "exit"], env=env, timeout=20, check=False)


def test_a_command_cannot_ask_the_git_credential_cache(
    tmp_path: Path, kiln_home: Path, cached: tuple[Path, dict[str, str]]
) -> None:
    home, env = cached
    root = home / "proj"
    root.mkdir()
    (root / "get.sh").write_text(GET)
    extra = {k: env[k] for k in ("XDG_CACHE_HOME",) if k in env}
    proc, results = one_command(
        root,
        "sh get.sh",
        home=home,
        kiln_home=kiln_home,
        script=tmp_path / "script.json",
        env=extra,
    )
    assert "asked" in results, results  # the command ran
    assert CANARY not in results + proc.stdout + proc.stderr
