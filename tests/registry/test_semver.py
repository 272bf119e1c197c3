"""SemVer parsing, precedence and the range language clients resolve with."""

from __future__ import annotations

from pathlib import Path

import pytest

from skills_registry.registry.errors import UsageError
from skills_registry.registry.semver import Range, Version, max_satisfying
from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill, publish_skill

VERSIONS = [
    "0.1.0",
    "0.1.5",
    "0.2.0",
    "1.0.0",
    "1.2.0",
    "1.2.7",
    "1.10.0",
    "2.0.0-rc.1",
    "2.0.0",
    "2.1.0-beta",
]


def test_precedence_follows_semver() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.10.0",
    ]
    assert sorted(ordered, key=lambda v: Version.parse(v).key()) == ordered
    assert Version.parse("1.0.0+build.5").key() == Version.parse("1.0.0").key()


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("1.2.0", "1.2.0"),
        ("^1.0.0", "1.10.0"),
        ("~1.2.0", "1.2.7"),
        (">=1.2.0", "2.0.0"),
        ("*", "2.0.0"),
        ("^0.1.0", "0.1.5"),
        ("1", "1.10.0"),
        ("1.2", "1.2.7"),
        ("2.0.0-rc.1", "2.0.0-rc.1"),
        ("^3.0.0", None),
    ],
)
def test_max_satisfying(spec: str, expected: str | None) -> None:
    assert max_satisfying(VERSIONS, spec) == expected


def test_prereleases_only_match_exactly() -> None:
    assert not Range.parse(">=2.0.0").matches(Version.parse("2.1.0-beta"))
    assert Range.parse("2.1.0-beta").matches(Version.parse("2.1.0-beta"))


@pytest.mark.parametrize("bad", ["1.0", "01.0.0", "1.0.0-", "v1.0.0", "1.0.0.0", "", "^x"])
def test_invalid_versions_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError) as info:
        Version.parse(bad)
    assert "invalid version" in str(info.value)
    assert info.value.hint and info.value.exit_code == 2


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("1.x", "1.10.0"), (">=1.0.0 <1.2.5", "1.2.0"), ("0.1 || 1.2", "1.2.7"), ("~0", "0.2.0")],
)
def test_npm_range_forms(spec: str, expected: str) -> None:
    assert max_satisfying(VERSIONS, spec) == expected


def test_garbage_range_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        Range.parse("newest please")
    assert "invalid version range" in str(info.value)


def test_a_long_invalid_range_is_named_in_a_short_line(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    """`kiln skills install acme/notes@111…` (5,000 digits) printed all 5,000 in its error."""
    publish_skill(registry, make_skill(tmp_path, "notes"), "1.0.0")
    for wanted in ("1" * 5000, "1.0.0-" + "a" * 5000 + "!"):
        result = kiln(
            "skills", "install", f"acme/notes@{wanted}", "--registry", registry.url,
            env=cli_env(tmp_path / "home"), cwd=project,
        )  # fmt: skip
        assert result.returncode == 2 and "invalid version range" in result.stderr
        assert len(result.stderr) < 300, len(result.stderr)
