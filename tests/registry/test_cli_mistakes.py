"""Commands that meet a typo or have nothing to act on, through real `kiln` processes with no
registry running: a mistyped `kiln registry` argument is one line and creates nothing, and the
lockfile commands in a project without skills say so."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.registry.conftest import cli_env, fails, kiln, ok

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_operator_typos_are_one_line_and_create_nothing(tmp_path: Path) -> None:
    """A mistyped --data folder is not exported as a new empty registry; a bad --expires is
    refused before a token exists."""
    env = cli_env(tmp_path / "home")
    typo = tmp_path / "registry-dta"
    fails(
        kiln(
            "registry",
            "marketplace",
            "--data",
            str(typo),
            "--base-url",
            "http://x",
            env=env,
            cwd=tmp_path,
        ),
        1,
        "no registry in",
    )
    assert not typo.exists()
    data = tmp_path / "registry-data"

    def make_token(expires: str) -> subprocess.CompletedProcess[str]:
        return kiln("registry", "token", "--data", str(data), "--namespace", "acme",
                    "--expires", expires, env=env, cwd=tmp_path)  # fmt: skip

    fails(make_token("forever"), 2, "use 30d, 12h, 90m or an ISO 8601 time")
    listed = ok(
        kiln("registry", "token", "list", "--data", str(data), "--json", env=env, cwd=tmp_path)
    )
    assert json.loads(listed) == []  # no token was made by the refused call
    token = ok(make_token("2099-01-31T12:00:00Z")).strip()
    assert token.startswith("kiln_")

    # serve refused a --base-url that is no http(s) URL; marketplace wrote it into every source
    out = tmp_path / "market"
    for base in ("not a url", "ftp://x", "http://x\ny"):
        made = kiln("registry", "marketplace", "--data", str(data), "--base-url", base,
                    "--out", str(out), env=env, cwd=tmp_path)  # fmt: skip
        fails(made, 2, "--base-url must be an http(s) URL")
    assert not out.exists()


def test_lockfile_commands_say_when_nothing_is_locked(tmp_path: Path) -> None:
    """verify/outdated/update in a project with no skills say so instead of printing nothing;
    --json stays a JSON list."""
    env = cli_env(tmp_path / "home")
    for command in ("verify", "outdated", "update"):
        out = ok(kiln("skills", command, env=env, cwd=tmp_path))
        assert "no skills in" in out and "skills-lock.json" in out, (command, out)
    for command in ("verify", "outdated"):
        assert json.loads(ok(kiln("skills", command, "--json", env=env, cwd=tmp_path))) == []


@pytest.mark.parametrize("url", ["http://exa\x01mple.com", "http://exa\nmple.com"])
def test_a_registry_url_holding_a_control_character_is_one_line(tmp_path: Path, url: str) -> None:
    """docs/registry.md: httpx raised InvalidURL (a traceback) on the first, and the second
    asked example.com (urlsplit drops a line break). From --registry or KILN_REGISTRY alike."""
    env = cli_env(tmp_path / "home")
    fails(kiln("skills", "search", "x", "--registry", url, env=env, cwd=tmp_path), 2, "control")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=url)
    fails(kiln("skills", "search", "x", env=env, cwd=tmp_path), 2, "control character")
