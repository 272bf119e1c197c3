"""A registry that signs whatever it serves (its key is pinned on first use, as any registry's
is), against the real `kiln skills`: only the client's own checks stand between it and the
disk. Each refusal is one line, and nothing is written outside the cache or half-installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.registry.conftest import cli_env, kiln, start_registry, tree_snapshot
from tests.registry.self_signed import SelfSigned
from tests.registry.self_signed import install as _install


def test_a_version_named_like_a_path_writes_nothing_outside_the_cache(tmp_path: Path) -> None:
    """A version named ``../../…/planted`` was written as ``<cache>/meta/…/<version>.json``: a
    JSON file anywhere the user can write, before anything was downloaded."""
    outside = tmp_path / "outside"
    outside.mkdir()
    server = SelfSigned(tmp_path, version="../" * 20 + str(outside / "planted").lstrip("/"))
    live = start_registry(tmp_path / "evil", app=server.app)
    try:
        code, stderr, project = _install(live.url, tmp_path)
    finally:
        live.stop()
    assert code != 0 and "invalid version" in stderr, stderr
    assert stderr.count("\n") == 1
    assert list(outside.iterdir()) == []
    assert tree_snapshot(project) == {}


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("versions", {"1.0.0": "active"}, "each version must map to an object"),
        ("distTags", {"latest": 5}, "distTags must map names to versions"),
        ("deprecated", ["x"], "deprecated must be a message or null"),
    ],
)
def test_signed_metadata_of_the_wrong_shape_is_refused_not_a_traceback(
    tmp_path: Path, field: str, value: Any, words: str
) -> None:
    server = SelfSigned(tmp_path)
    server.signed[field] = value
    live = start_registry(tmp_path / "evil", app=server.app)
    try:
        code, stderr, project = _install(live.url, tmp_path)
    finally:
        live.stop()
    assert code == 5 and words in stderr and stderr.count("\n") == 1, stderr
    assert tree_snapshot(project) == {}


def test_info_on_a_signed_document_of_the_wrong_shape_prints_what_it_can(tmp_path: Path) -> None:
    server = SelfSigned(tmp_path)
    server.doc.update(files=[1, "SKILL.md", {"path": "SKILL.md", "size": "big"}], scan="clean",
                      frontmatter=["x"], unpackedSize="9")  # fmt: skip
    live = start_registry(tmp_path / "evil", app=server.app)
    try:
        done = kiln("skills", "info", "acme/helper", "--registry", live.url,
                    env=cli_env(tmp_path / "home"), cwd=tmp_path)  # fmt: skip
    finally:
        live.stop()
    assert done.returncode == 0, done.stderr
    assert "acme/helper@1.0.0" in done.stdout and "files: 1" in done.stdout, done.stdout


def test_a_skill_md_version_other_than_the_signed_one_is_refused(tmp_path: Path) -> None:
    """SKILL.md `metadata.version` is what the skill says it is (agents and `kiln skills list`
    show it): an archive signed as 1.0.0 that calls itself 9.9.9 is refused at install in one
    line, with nothing installed and no lockfile."""
    skill_md = b'---\nname: helper\ndescription: x\nmetadata:\n  version: "9.9.9"\n---\n'
    server = SelfSigned(tmp_path, skill_md=skill_md)
    live = start_registry(tmp_path / "evil", app=server.app)
    try:
        code, stderr, project = _install(live.url, tmp_path)
    finally:
        live.stop()
    assert code != 0 and stderr.count("\n") == 1, stderr
    assert "metadata.version is '9.9.9', not '1.0.0' as signed" in stderr, stderr
    assert tree_snapshot(project) == {}
