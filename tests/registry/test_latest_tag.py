"""`latest` as its publisher set it survives status changes of other versions.

A publisher who finds 2.0.0 bad can move `latest` back to 1.0.0 without yanking 2.0.0. Before,
any later status change of any version (yanking or deprecating 1.5.0) recomputed `latest` as
the newest live release, so 2.0.0 was what `kiln skills install acme/deploy` installed again,
without a word; and search's `latestVersion` kept saying 2.0.0 even while `latest` was 1.0.0.
`latest` still follows a yank of the version it names, and returns with its restore.

Each backend pair; resolution by a real `kiln skills install` process.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from skills_registry.archive import build_archive, read_dir
from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill


@pytest.fixture
def registry(backend_registry: LiveRegistry) -> LiveRegistry:
    return backend_registry


def _latest(registry: LiveRegistry) -> tuple[str | None, str | None]:
    tags = httpx.get(f"{registry.url}/v1/skills/acme/deploy").json()["distTags"]
    rows = httpx.get(f"{registry.url}/v1/skills?q=deploy").json()["skills"]
    return tags.get("latest"), rows[0]["latestVersion"]


def test_latest_set_by_its_publisher_stays_through_other_status_changes(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    auth = {"Authorization": f"Bearer {registry.token('acme')}"}
    base = f"{registry.url}/v1/skills/acme/deploy"
    archive = build_archive(read_dir(make_skill(tmp_path, "deploy")))
    for version in ("1.0.0", "1.5.0", "2.0.0"):
        assert httpx.put(f"{base}/versions/{version}", content=archive, headers=auth).is_success

    def status(version: str, value: str) -> None:
        answer = httpx.put(
            f"{base}/versions/{version}/status", json={"status": value}, headers=auth
        )
        assert answer.status_code == 200, answer.text

    status("2.0.0", "yanked")  # the version latest names: latest moves down
    assert _latest(registry) == ("1.5.0", "1.5.0")
    status("2.0.0", "active")  # and back with its restore
    assert _latest(registry) == ("2.0.0", "2.0.0")

    moved = httpx.put(f"{base}/dist-tags/latest", json={"version": "1.0.0"}, headers=auth)
    assert moved.status_code == 200
    assert _latest(registry) == ("1.0.0", "1.0.0")  # search said 2.0.0
    for change in (("1.5.0", "deprecated"), ("1.5.0", "yanked"), ("1.5.0", "active")):
        status(*change)
        assert _latest(registry) == ("1.0.0", "1.0.0"), change  # before: 2.0.0 again

    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)
    installed = kiln("skills", "install", "acme/deploy", "--yes", env=env, cwd=project)
    assert installed.returncode == 0, installed.stderr
    assert "acme/deploy@1.0.0" in installed.stdout

    status("1.0.0", "yanked")  # the version it names is yanked: the newest live release
    assert _latest(registry) == ("2.0.0", "2.0.0")


def test_no_tag_names_a_yanked_version(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    """Before, `latest` (or any tag) could be put on a yanked version, and `kiln skills
    install acme/deploy@latest` then installed the release its publisher had withdrawn."""
    auth = {"Authorization": f"Bearer {registry.token('acme')}"}
    base = f"{registry.url}/v1/skills/acme/deploy"
    archive = build_archive(read_dir(make_skill(tmp_path, "deploy")))
    for version in ("1.0.0", "1.1.0"):
        assert httpx.put(f"{base}/versions/{version}", content=archive, headers=auth).is_success
    beta = httpx.put(f"{base}/dist-tags/beta", json={"version": "1.1.0"}, headers=auth)
    assert beta.status_code == 200, beta.text
    yank = {"status": "yanked", "reason": "leaks tokens"}
    assert httpx.put(f"{base}/versions/1.1.0/status", json=yank, headers=auth).is_success
    assert _latest(registry) == ("1.0.0", "1.0.0")

    for tag in ("latest", "beta"):
        refused = httpx.put(f"{base}/dist-tags/{tag}", json={"version": "1.1.0"}, headers=auth)
        assert refused.status_code == 409, refused.text
        assert "1.1.0 is yanked" in refused.json()["error"]["message"]
    assert _latest(registry) == ("1.0.0", "1.0.0")

    # `beta` was set before the yank: a client does not follow it to the withdrawn release.
    env = cli_env(tmp_path / "home")
    run = kiln("skills", "install", "acme/deploy@beta", "--registry", registry.url, "--yes",
               env=env, cwd=project)  # fmt: skip
    assert run.returncode != 0, run.stdout
    assert "dist-tag 'beta' names 1.1.0, which is yanked" in run.stderr, run.stderr
    assert not (project / ".kiln" / "skills" / "deploy").exists()
    latest = kiln("skills", "install", "acme/deploy@latest", "--registry", registry.url, "--yes",
                  env=env, cwd=project)  # fmt: skip
    assert latest.returncode == 0, latest.stderr
    assert '"version": "1.0.0"' in (project / "skills-lock.json").read_text()


def test_latest_is_moved_never_removed(registry: LiveRegistry, tmp_path: Path) -> None:
    """Before, `DELETE …/dist-tags/latest` answered 200: the signed metadata then had no
    `latest` while search's `latestVersion` still named the old one."""
    auth = {"Authorization": f"Bearer {registry.token('acme')}"}
    base = f"{registry.url}/v1/skills/acme/deploy"
    archive = build_archive(read_dir(make_skill(tmp_path, "deploy")))
    for version in ("1.0.0", "1.1.0"):
        assert httpx.put(f"{base}/versions/{version}", content=archive, headers=auth).is_success
    assert httpx.put(f"{base}/dist-tags/beta", json={"version": "1.0.0"}, headers=auth).is_success

    removed = httpx.delete(f"{base}/dist-tags/latest", headers=auth)
    assert removed.status_code == 409, removed.text
    assert "cannot be removed" in removed.json()["error"]["message"]
    assert _latest(registry) == ("1.1.0", "1.1.0")
    assert httpx.get(f"{base}/metadata").json()["signed"]["distTags"]["latest"] == "1.1.0"
    assert httpx.delete(f"{base}/dist-tags/beta", headers=auth).status_code == 200  # others go
    assert "beta" not in httpx.get(base).json()["distTags"]


def test_a_dist_tag_the_skill_lacks_is_said_as_one(
    live: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    """`install acme/deploy@beta` with no `beta` tag said "invalid version range 'beta'" and
    exit 2 (bad usage), though the docs list a dist-tag as a range and the registry merely has
    no such tag: exit 1, naming the tags and versions there are. A malformed range stays 2."""
    auth = {"Authorization": f"Bearer {live.token('acme')}"}
    archive = build_archive(read_dir(make_skill(tmp_path, "deploy")))
    url = f"{live.url}/v1/skills/acme/deploy/versions/1.0.0"
    assert httpx.put(url, content=archive, headers=auth).is_success
    env = cli_env(tmp_path / "home", KILN_REGISTRY=live.url)
    missing = kiln("skills", "install", "acme/deploy@beta", "--yes", env=env, cwd=project)
    assert missing.returncode == 1, missing.stderr
    assert missing.stderr.splitlines() == [
        "kiln: acme/deploy has no dist-tag 'beta' (dist-tags: latest; versions: 1.0.0)"
    ]
    malformed = kiln("skills", "install", "acme/deploy@>>1", "--yes", env=env, cwd=project)
    assert malformed.returncode == 2 and "invalid version range '>>1'" in malformed.stderr
    assert not (project / ".kiln" / "skills" / "deploy").exists()
