"""Fixtures for the index tests: small real repositories written to temp folders."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from indexer import Index

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "langs"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


@pytest.fixture
def open_index() -> Iterator[Callable[..., Index]]:
    opened: list[Index] = []

    def make(root: Path, **kwargs: object) -> Index:
        idx = Index(root, **kwargs)  # type: ignore[arg-type]
        opened.append(idx)
        return idx

    yield make
    for idx in opened:
        idx.close()
