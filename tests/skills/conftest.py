"""Helpers to write skill folders into temp dirs (real files, no mocks)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "skills"

SkillFactory = Callable[..., Path]


@pytest.fixture
def make_skill() -> SkillFactory:
    def make(
        parent: Path,
        name: str,
        description: str = "Does a thing. Use when testing.",
        *,
        frontmatter: str | None = None,
        body: str = "# Steps\n\n1. Do it.\n",
        folder: str | None = None,
    ) -> Path:
        target = parent / (folder or name)
        target.mkdir(parents=True, exist_ok=True)
        head = (
            frontmatter
            if frontmatter is not None
            else f"name: {name}\ndescription: {description}\n"
        )
        (target / "SKILL.md").write_text(f"---\n{head}---\n{body}", encoding="utf-8")
        return target

    return make
