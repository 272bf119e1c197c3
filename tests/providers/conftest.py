"""Fixtures for provider tests: a real wire-format server and a retry policy whose waits are
recorded instead of slept, so retry tests are fast and can check the delays."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from agent.providers.retry import RetryPolicy
from agent.testing.wire_server import WireServer
from tests.providers.helpers import OPEN_MODELS


class SleepRecorder:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def waits() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def fast_retry(waits: SleepRecorder) -> RetryPolicy:
    return RetryPolicy(base_delay=0.5, sleep=waits)


@pytest.fixture
def wire() -> Iterator[WireServer]:
    with WireServer() as srv:
        yield srv


@pytest.fixture
def unused_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(autouse=True)
async def close_models() -> AsyncIterator[None]:
    yield
    while OPEN_MODELS:
        await OPEN_MODELS.pop().aclose()
