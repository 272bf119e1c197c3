"""What the two SDK-backed providers share: one pooled SDK client per event loop, closed while
that loop still runs, and the one retry policy around each streamed call."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Self
from urllib.parse import urlsplit

from agent.errors import ConfigError, ProviderError, ProviderUnavailable
from agent.providers.retry import RetryPolicy, retrying_stream
from agent.providers.sdk_errors import classify_sdk_error, is_transport_error
from agent.types import Request, StreamItem
from kiln_errors.setting import number_in

DEFAULT_TIMEOUT = 600.0  # seconds without a byte before a request is abandoned (then retried)
MAX_TIMEOUT = 86_400.0  # a day: past it no stalled stream is ever noticed


def _timeout_from_env() -> float:
    """``KILN_PROVIDER_TIMEOUT``: a slow local server may need more, a CI run less."""
    raw = os.environ.get("KILN_PROVIDER_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    value = number_in(raw, 0, MAX_TIMEOUT, above_low=True)
    if value is None:
        raise ConfigError(
            f"KILN_PROVIDER_TIMEOUT {raw[:40]!r} is not a number of seconds above 0, at most "
            f"{MAX_TIMEOUT:,g}",
            hint="e.g. 120",
        )
    return value


def _http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError past 65535
    except ValueError:
        return False
    return (
        url.isprintable()
        and url.lower().startswith(("http://", "https://"))
        and bool(parts.hostname)
        and port != 0
    )


class SdkClientModel:
    name = "sdk"  # also the SDK's top-level module, whose exceptions are classified
    sdk_module = ""  # that module when it is not ``name`` (azure runs on the openai SDK)
    key_var = ""  # e.g. ANTHROPIC_API_KEY
    base_var = ""  # e.g. ANTHROPIC_BASE_URL
    model: str
    base_url: str | None
    timeout: float
    retry: RetryPolicy
    _api_key: str

    _client: Any = None
    _client_loop: asyncio.AbstractEventLoop | None = None

    def _init_endpoint(
        self,
        *,
        model: str | None,
        api_key: str | None,
        base_url: str | None,
        retry: RetryPolicy | None,
        timeout: float | None,
        default_model: str,
        no_key_hint: str,
    ) -> None:
        """Model, endpoint and key from the arguments, else the SDK's usual variables."""
        self.model = model or os.environ.get("KILN_MODEL") or default_model
        self.base_url = base_url or os.environ.get(self.base_var) or None
        if self.base_url and not _http_url(self.base_url):
            # The SDK would send nothing and report a dropped connection, retried in vain (or,
            # for ``http://[::1``, raise a ValueError: an internal error).
            raise ConfigError(
                f"{self.base_var or 'the base URL'} {self.base_url[:200]!r} is not an http:// or "
                "https:// URL naming a host (and a port from 1 to 65535)",
                hint="e.g. http://localhost:11434/v1",
            )
        key = api_key or os.environ.get(self.key_var)
        if not key:
            if not self.base_url:
                raise ProviderUnavailable(f"{self.name}: no API key", hint=no_key_hint)
            key = "not-needed"  # compatible servers (Ollama, llama.cpp, vLLM) ignore the key
        self._api_key = key
        self.retry = retry or RetryPolicy()
        self.timeout = timeout if timeout is not None else _timeout_from_env()

    async def _relay(
        self, open_stream: Callable[[], Awaitable[Any]], feed: Callable[[Any], Iterable[StreamItem]]
    ) -> AsyncGenerator[StreamItem, None]:
        """Yield what ``feed`` makes of each streamed event; SDK and transport failures become
        the harness's typed provider errors."""
        try:
            stream = await open_stream()
            events = 0
            async with stream:
                async for event in stream:
                    events += 1
                    for item in feed(event):
                        yield item
            if not events:
                self._check_event_stream(stream)
        except ProviderError:
            raise
        except Exception as exc:
            if is_transport_error(exc) or type(exc).__module__.split(".")[0] == (
                self.sdk_module or self.name
            ):
                raise classify_sdk_error(
                    exc,
                    provider=self.name,
                    key_var=self.key_var,
                    base_var=self.base_var,
                    base_url=self.base_url,
                ) from exc
            # Bytes that are not UTF-8, not SSE, or events of an unknown shape: the server at the
            # other end does not speak this API. Same answer again would not help.
            raise ProviderError(
                f"{self.name}: malformed reply stream from {self.base_url or 'the API'} "
                f"({type(exc).__name__}: {str(exc)[:200]})",
                hint=f"check that {self.base_var or 'the base URL'} points at a server that "
                f"speaks the {self.name} API",
            ) from exc

    def _check_event_stream(self, stream: Any) -> None:
        """A 200 reply with no events at all that is not an event stream (a login page from a
        proxy, plain JSON from a server that ignored ``stream``) is the wrong endpoint: asking
        again gets the same page, so it is not retried."""
        response = getattr(stream, "response", None)
        ctype = str(getattr(response, "headers", {}).get("content-type", "") or "")
        if "event-stream" in ctype:
            return
        where = self.base_url or "the API"
        raise ProviderError(
            f"{self.name}: {where} answered with {ctype.split(';')[0] or 'no content type'}, "
            "not an event stream",
            hint=f"check that {self.base_var or 'the base URL'} points at the {self.name} API "
            "itself, not a web page or a login proxy",
        )

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
        return retrying_stream(lambda: self._once(request), policy=self.retry, provider=self.name,
                               before_retry=request.before_retry)  # fmt: skip

    def _once(self, request: Request) -> AsyncGenerator[StreamItem, None]:
        raise NotImplementedError
