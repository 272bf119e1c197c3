"""What the two SDK-backed providers share: one pooled SDK client per event loop, closed while
that loop still runs, and the one retry policy around each streamed call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Self

from agent.providers.retry import RetryPolicy, retrying_stream
from agent.types import Request, StreamItem


class SdkClientModel:
    name = "sdk"
    base_url: str | None
    timeout: float
    retry: RetryPolicy
    _api_key: str

    _client: Any = None
    _client_loop: asyncio.AbstractEventLoop | None = None

    def _new_client(self) -> Any:
        """Build the SDK's async client (``max_retries=0``: ``retry`` is the only policy)."""
        raise NotImplementedError

    def _sdk_client(self) -> Any:
        """One client per event loop: its connection pool belongs to the loop that made it."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = self._new_client()
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close pooled connections while their event loop is still running."""
        client, self._client = self._client, None
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        return retrying_stream(lambda: self._once(request), policy=self.retry, provider=self.name)

    def _once(self, request: Request) -> AsyncGenerator[StreamItem, None]:
        raise NotImplementedError
