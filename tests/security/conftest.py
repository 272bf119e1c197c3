"""Fixtures for the security suite: the hostile setup (outside /tmp) and a live registry."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.registry.conftest import LiveRegistry, start_registry
from tests.security.hostile import Hostile, build


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A folder outside /tmp (see ``hostile.build``)."""
    path = Path(tempfile.mkdtemp(prefix="kiln-security-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def hostile(tmp_path: Path, kiln_home: Path, host_dir: Path) -> Iterator[Hostile]:
    env = build(tmp_path, kiln_home, host_dir)
    yield env
    env.listener.close()
    env.victim.kill()
    env.victim.wait()
    env.hosttmp.unlink(missing_ok=True)


@pytest.fixture
def live_registry(tmp_path: Path) -> Iterator[LiveRegistry]:
    live = start_registry(tmp_path / "registry-data")
    try:
        yield live
    finally:
        live.stop()
