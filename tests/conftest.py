"""Shared fixtures: every test gets its own KILN_HOME so nothing touches the real ~/.kiln."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.repos import make_failing_repo

if TYPE_CHECKING:
    from tests.registry.conftest import LiveRegistry


@pytest.fixture(autouse=True)
def kiln_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("kiln_home")
    monkeypatch.setenv("KILN_HOME", str(home))
    for var in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "KILN_PROVIDER",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def read_only_disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs, remounted read-only by the test; skipped where mounting is not allowed."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)])
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.fixture
def failing_repo(tmp_path: Path) -> Path:
    return make_failing_repo(tmp_path)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[LiveRegistry]:
    """A registry server in a thread on a loopback port, stopped after the test."""
    from tests.registry.conftest import start_registry  # the registry extra, only when used

    live = start_registry(tmp_path / "registry-data")
    try:
        yield live
    finally:
        live.stop()
