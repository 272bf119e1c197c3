"""The range a lockfile keeps as `requested` is stored normalised: no space around it, one
space between its parts. Before, `kiln skills install "acme/x@1.0.0 "` (a stray space inside
the quotes) stored `"1.0.0 "`, so one range had several spellings in lockfiles and in what
`update` and `outdated` print. A lockfile written before keeps working and is stored
normalised at its next write."""

from __future__ import annotations

import json
from pathlib import Path

from tests.registry.conftest import FIXTURES, cli_env, kiln, ok, serving

SKILL = "acme/brand-guidelines"


def _publish(data: Path, home: Path, url: str, tmp_path: Path, *versions: str) -> None:
    env = cli_env(home)
    token = ok(kiln("registry", "token", "--namespace", "acme", "--data", str(data),
                    env=env, cwd=tmp_path)).strip()  # fmt: skip
    for version in versions:
        ok(kiln("skills", "publish", str(FIXTURES / "brand-guidelines"), "--version", version,
                "--token", token, "--registry", url, env=env, cwd=tmp_path))  # fmt: skip


def _requested(project: Path) -> str:
    lock = json.loads((project / "skills-lock.json").read_text())
    return str(lock["skills"][SKILL]["requested"])


def test_the_lockfile_stores_the_range_normalised(tmp_path: Path, project: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    with serving(data, home) as port:
        url = f"http://127.0.0.1:{port}"
        _publish(data, home, url, tmp_path, "1.0.0", "1.1.0")
        env = cli_env(home, KILN_REGISTRY=url)
        for typed, stored, installed in [
            ("1.0.0 ", "1.0.0", "1.0.0"),
            ("  >=1.0.0 \t <2 ", ">=1.0.0 <2", "1.1.0"),
        ]:
            ok(kiln("skills", "install", f"{SKILL}@{typed}", "--yes", env=env, cwd=project))
            assert _requested(project) == stored
            lock = json.loads((project / "skills-lock.json").read_text())
            assert lock["skills"][SKILL]["version"] == installed


def test_a_range_locked_with_spaces_is_stored_normalised_at_the_next_write(
    tmp_path: Path, project: Path
) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    with serving(data, home) as port:
        url = f"http://127.0.0.1:{port}"
        _publish(data, home, url, tmp_path, "1.0.0")
        env = cli_env(home, KILN_REGISTRY=url)
        ok(kiln("skills", "install", f"{SKILL}@^1.0.0", "--yes", env=env, cwd=project))
        path = project / "skills-lock.json"
        lock = json.loads(path.read_text())
        lock["skills"][SKILL]["requested"] = " ^1.0.0 "  # what an earlier install stored
        path.write_text(json.dumps(lock))
        _publish(data, home, url, tmp_path, "1.2.0")
        outdated = ok(kiln("skills", "outdated", env=env, cwd=project))
        assert "wanted 1.2.0" in outdated, outdated
        ok(kiln("skills", "update", "--yes", env=env, cwd=project))
        lock = json.loads(path.read_text())
        assert lock["skills"][SKILL]["version"] == "1.2.0" and _requested(project) == "^1.0.0"
