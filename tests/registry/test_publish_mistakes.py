"""A careless publisher: `kiln skills publish` of a folder that holds credentials.

Published versions are immutable and a yanked version stays downloadable by exact version, so
a `.env` or a private key that reaches the registry is public for good. Before, `publish`
uploaded them and only then printed "was it published by mistake?". It now refuses before
anything is sent (a real registry on 127.0.0.1 is asked afterwards and knows no such skill);
`--include-secret-files` publishes them when they are meant to be public.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.registry.conftest import LiveRegistry, blob_names, cli_env, kiln, make_skill


def _publish(reg: LiveRegistry, folder: Path, tmp_path: Path, *extra: str):
    return kiln(
        "skills", "publish", str(folder), "--version", "1.0.0", "--registry", reg.url,
        "--token", reg.token("acme"), *extra, env=cli_env(tmp_path / "home"), cwd=tmp_path,
    )  # fmt: skip


def test_credentials_in_the_folder_are_not_published(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    folder = make_skill(
        tmp_path / "src",
        "notes",
        extra={".env": "AWS_SECRET_ACCESS_KEY=abc123\n", "keys/id_ed25519": "-----BEGIN\n"},
    )
    refused = _publish(registry, folder, tmp_path)
    assert refused.returncode == 2, refused.stdout  # before: "published acme/notes@1.0.0"
    assert ".env, keys/id_ed25519" in refused.stderr and "--include-secret-files" in refused.stderr
    assert refused.stderr.count("\n") == 1
    assert httpx.get(f"{registry.url}/v1/skills/acme/notes").status_code == 404
    assert blob_names(registry) == set()

    meant = _publish(registry, folder, tmp_path, "--include-secret-files")
    assert meant.returncode == 0, meant.stderr
    assert "secret-file .env" in meant.stderr  # the scan still says what went out


def test_a_folder_without_credentials_publishes_as_before(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    folder = make_skill(tmp_path / "src", "notes", extra={"docs/environment.md": "# Env\n"})
    result = _publish(registry, folder, tmp_path)
    assert result.returncode == 0, result.stderr
    assert httpx.get(f"{registry.url}/v1/skills/acme/notes").status_code == 200


def test_a_folder_that_cannot_be_packed_names_what_to_fix(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    """Before, the hint said "build the archive with `kiln skills publish PATH`": the command
    the publisher had just run."""
    folder = make_skill(tmp_path / "src", "notes")
    (folder / "link").symlink_to("/etc/hostname")
    result = _publish(registry, folder, tmp_path)
    assert result.returncode == 1, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "link: only regular files can be packed" in line
    assert "kiln skills publish" not in line and "then publish again" in line
    assert httpx.get(f"{registry.url}/v1/skills/acme/notes").status_code == 404


def test_a_bad_version_is_reported_before_the_token_or_the_registry(tmp_path: Path) -> None:
    """`--version notsemver` without a token was answered about the token (or the registry it
    could not reach): the version is bad input, reported first, with nothing contacted."""
    folder = make_skill(tmp_path / "src", "notes")
    env = cli_env(tmp_path / "home")
    for where in (["--registry", "http://127.0.0.1:9"], []):  # unreachable; none configured
        result = kiln("skills", "publish", str(folder), "--version", "notsemver", *where,
                      env=env, cwd=tmp_path)  # fmt: skip
        assert result.returncode == 2, result.stderr
        [line] = result.stderr.strip().splitlines()
        assert "invalid version 'notsemver' (--version): use exact SemVer such as 1.2.3" in line
    folder = make_skill(tmp_path / "src", "dated", front="metadata:\n  version: 2024-01\n")
    result = kiln("skills", "publish", str(folder), env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "invalid version '2024-01' (metadata.version in SKILL.md)" in result.stderr
