"""A repository's skills flooding the catalog (docs/security.md section 6). The catalog of skill
names and descriptions goes with every request; a checkout may ship 500 skills in each of its
three skill folders, each with a description of up to 1 MB (the SKILL.md limit). Before, one
such skill put 900 kB into the first request of every session, and 1,000 ordinary ones 1 MB:
past most context windows, and paid for at every turn. Through the real `kiln run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run_json

pytestmark = pytest.mark.e2e


def _skill(folder: Path, name: str, description: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\nBody.\n")


def test_repository_skills_share_a_bounded_part_of_the_catalog(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = tmp_path / "repo"
    _skill(root / ".kiln" / "skills" / "huge", "huge", "h" * 900_000)
    for i in range(500):
        _skill(root / ".agents" / "skills" / f"s{i}", f"s{i}", f"helper {i} " + "y" * 1000)
        _skill(root / ".claude" / "skills" / f"t{i}", f"t{i}", f"tool {i} " + "w" * 1000)
    mine = "Deploys to the staging cluster. " + "u" * 900  # the user's own: listed whole
    _skill(kiln_home / "skills" / "deploy", "deploy", mine)
    _, out = kiln_run_json(
        root, [], home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    first = json.loads(Path(out["transcript"]).read_text().splitlines()[0])
    text = "\n".join(block["text"] for block in first["content"])
    assert len(text) < 40_000, len(text)
    assert f"- deploy [third-party]: {mine}\n" in text
    assert "h" * 1025 not in text and "- huge: " + "h" * 1024 + "…" in text
    assert "more skills of this repository not listed" in text
