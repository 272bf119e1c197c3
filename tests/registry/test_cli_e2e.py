"""The main path through real processes: `kiln registry serve` and `kiln skills ...` subprocesses."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.registry.conftest import FIXTURES, cli_env, fails, kiln, make_skill, ok

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, subprocess.Popen[str]]]:
    data = tmp_path / "registry-data"
    env = cli_env(tmp_path / "server-home")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsp_server",
            "registry",
            "serve",
            "--port",
            "0",
            "--data",
            str(data),
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"listening on (http://\S+)", line)
    assert match, line
    threading.Thread(
        target=proc.stderr.read, daemon=True
    ).start()  # drain: a full pipe would stall it
    try:
        yield match.group(1), data, proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_publish_search_install_update_yank_frozen_offline(served, tmp_path: Path) -> None:
    url, data, proc = served
    home = tmp_path / "home"
    env = cli_env(home)
    project = tmp_path / "project"
    project.mkdir()
    token = ok(
        kiln("registry", "token", "--data", str(data), "--namespace", "acme", env=env, cwd=tmp_path)
    ).strip()
    assert token.startswith("kiln_")

    for name in ("brand-guidelines", "internal-comms", "frontend-design"):
        out = ok(
            kiln(
                "skills",
                "publish",
                str(FIXTURES / name),
                "--registry",
                url,
                "--token",
                token,
                "--version",
                "1.0.0",
                env=env,
                cwd=tmp_path,
            )
        )
        assert out.startswith(f"published acme/{name}@1.0.0 sha256:")

    hits = json.loads(
        ok(
            kiln(
                "skills",
                "search",
                "brand colors",
                "--registry",
                url,
                "--json",
                env=env,
                cwd=tmp_path,
            )
        )
    )
    assert hits[0] == {
        "id": "acme/brand-guidelines",
        "name": "brand-guidelines",
        "description": hits[0]["description"],
        "latestVersion": "1.0.0",
        "deprecated": None,
    }
    assert "brand" in hits[0]["description"]

    env_reg = cli_env(home, KILN_REGISTRY=url)  # default registry from the environment
    ok(
        kiln(
            "skills",
            "install",
            "acme/brand-guidelines",
            "--project",
            "--yes",
            env=env_reg,
            cwd=project,
        )
    )
    installed = project / ".kiln/skills/brand-guidelines"
    assert (installed / "SKILL.md").read_bytes() == (
        FIXTURES / "brand-guidelines/SKILL.md"
    ).read_bytes()
    lock = json.loads((project / "skills-lock.json").read_text())
    assert lock["skills"]["acme/brand-guidelines"]["version"] == "1.0.0"
    listed = ok(kiln("skills", "list", env=env, cwd=project))
    assert (
        "brand-guidelines" in listed and "third-party" in listed
    )  # the marker is seen by discovery

    newer = tmp_path / "src" / "brand-guidelines"
    shutil.copytree(FIXTURES / "brand-guidelines", newer)
    (newer / "CHANGES.md").write_text("1.1.0: notes\n")
    ok(kiln("skills", "login", "--registry", url, "--token", token, env=env, cwd=tmp_path))
    assert (home / "credentials.json").stat().st_mode & 0o777 == 0o600
    ok(
        kiln(
            "skills",
            "publish",
            str(newer),
            "--registry",
            url,
            "--version",
            "1.1.0",
            env=env,
            cwd=tmp_path,
        )
    )

    outdated = json.loads(ok(kiln("skills", "outdated", "--json", env=env, cwd=project)))
    assert outdated == [
        {
            "id": "acme/brand-guidelines",
            "current": "1.0.0",
            "status": "active",
            "statusReason": "",
            "wanted": "1.1.0",
            "latest": "1.1.0",
        }
    ]
    assert "updated acme/brand-guidelines@1.1.0" in ok(
        kiln("skills", "update", "--yes", env=env, cwd=project)
    )
    assert (installed / "CHANGES.md").exists()

    ok(
        kiln(
            "skills",
            "yank",
            "acme/brand-guidelines@1.1.0",
            "--registry",
            url,
            "--reason",
            "oops",
            env=env,
            cwd=tmp_path,
        )
    )
    other = tmp_path / "other"
    other.mkdir()
    ok(
        kiln(
            "skills",
            "install",
            "acme/brand-guidelines@^1.0.0",
            "--registry",
            url,
            "--yes",
            env=env,
            cwd=other,
        )
    )
    assert (
        json.loads((other / "skills-lock.json").read_text())["skills"]["acme/brand-guidelines"][
            "version"
        ]
        == "1.0.0"
    )

    shutil.rmtree(project / ".kiln")
    ok(
        kiln("skills", "install", "--frozen", env=env, cwd=project)
    )  # yanked 1.1.0 still installs by exact pin
    assert (installed / "CHANGES.md").exists()

    proc.terminate()
    proc.wait(timeout=10)
    shutil.rmtree(project / ".kiln")
    out = ok(kiln("skills", "install", "--frozen", env=env, cwd=project))  # offline, from the cache
    assert "installed acme/brand-guidelines@1.1.0" in out
    assert "ok" in ok(kiln("skills", "verify", env=env, cwd=project))
    fails(
        kiln("skills", "search", "x", "--registry", url, env=env, cwd=project),
        1,
        "cannot reach registry",
    )


def test_cli_errors_are_one_line(served, tmp_path: Path) -> None:
    url, data, _proc = served
    env = cli_env(tmp_path / "home")
    token = ok(
        kiln("registry", "token", "--data", str(data), "--namespace", "acme", env=env, cwd=tmp_path)
    ).strip()
    fails(
        kiln(
            "skills",
            "publish",
            str(FIXTURES / "brand-guidelines"),
            "--registry",
            url,
            "--token",
            token,
            "--version",
            "1.0.0",
            "--namespace",
            "someone",
            env=env,
            cwd=tmp_path,
        ),
        5,
        "scoped to namespace 'acme'",
    )
    fails(kiln("skills", "install", "acme/x", env=env, cwd=tmp_path), 2, "no registry configured")

    skill = make_skill(tmp_path, "ship-it", extra={"scripts/ship.sh": "#!/bin/sh\necho shipping\n"})
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "settings.json").write_text(
        json.dumps({"registry": url})
    )  # default from settings

    def publish(version: str) -> subprocess.CompletedProcess[str]:
        return kiln(
            "skills",
            "publish",
            str(skill),
            "--token",
            token,
            "--version",
            version,
            env=env,
            cwd=tmp_path,
        )

    ok(publish("0.1.0"))
    ok(publish("0.1.1"))
    ci_env = cli_env(tmp_path / "home", KILN_CI="1")
    fails(  # CI never trusts a registry key on first use
        kiln("skills", "install", "acme/ship-it", "--yes", env=ci_env, cwd=tmp_path),
        5,
        "no key is pinned",
    )
    served_key = httpx.get(f"{url}/.well-known/kiln-registry.json").json()["keys"][0]
    shown = ok(kiln("skills", "trust", url, env=env, cwd=tmp_path))
    assert served_key["publicKey"] in shown and not (tmp_path / "home/trusted_keys.json").exists()
    fails(
        kiln("skills", "trust", url, "--key", "bm90IGEga2V5", env=env, cwd=tmp_path), 2, "32 bytes"
    )
    other_key = base64.b64encode(bytes(range(32))).decode()  # a valid key the registry lacks
    wrong = kiln("skills", "trust", url, "--key", other_key, env=env, cwd=tmp_path)
    assert wrong.returncode == 0 and "pinned" in wrong.stdout
    assert f"serves {served_key['keyId']}, not the pinned" in wrong.stderr, wrong.stderr
    right = kiln("skills", "trust", url, "--key", served_key["publicKey"], env=env, cwd=tmp_path)
    assert right.returncode == 0 and right.stderr == "", right.stderr
    assert served_key["keyId"] in right.stdout
    fails(
        kiln("skills", "install", "acme/ship-it", "--yes", env=ci_env, cwd=tmp_path),
        5,
        "not pinned in the lockfile",
    )
    assert not (tmp_path / ".kiln").exists()
    fails(
        kiln("skills", "install", "acme/ship-it", env=env, cwd=tmp_path, input=""),
        5,
        "not confirmed",
    )
    ok(kiln("skills", "install", "acme/ship-it@0.1.0", "--yes", env=env, cwd=tmp_path))
    fails(publish("0.1.0"), 1, "already published")
    (tmp_path / ".kiln/skills/ship-it/scripts/ship.sh").write_text("#!/bin/sh\nrm -rf /\n")
    fails(kiln("skills", "update", "--yes", env=env, cwd=tmp_path), 1, "modified locally")
    verify = kiln("skills", "verify", env=env, cwd=tmp_path)
    assert verify.returncode == 5 and "FAIL acme/ship-it" in verify.stdout
    assert "failed verification" in verify.stderr
    info = json.loads(ok(kiln("skills", "info", "acme/ship-it", "--json", env=env, cwd=tmp_path)))
    assert info["scripts"] == ["scripts/ship.sh"] and info["tokens"]["total"] > 0
    preview = ok(
        kiln(
            "skills",
            "info",
            "acme/ship-it@0.1.0",
            "--file",
            "scripts/ship.sh",
            env=env,
            cwd=tmp_path,
        )
    )
    assert preview == "#!/bin/sh\necho shipping\n"
