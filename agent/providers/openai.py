"""OpenAI Chat Completions provider; works against any OpenAI-compatible base URL (OpenAI,
Ollama, llama.cpp server, vLLM).

The harness keeps Anthropic-shaped messages; this module converts on the way out (tool results
become ``role: tool`` messages, ``tool_use`` blocks become ``tool_calls``) and back (streamed
tool-call pieces are gathered by index, so parallel calls come out whole: ``openai_stream``).
The conversion is a pure function of the stored transcript, so the same transcript always yields
the same bytes and the provider's automatic prefix cache keeps hitting.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import urlsplit

from agent.errors import ConfigError, ProviderError, ServerError
from agent.providers.arguments import stored_form
from agent.providers.openai_stream import ChunkAccumulator
from agent.providers.retry import RetryPolicy, provider_error
from agent.providers.sdk_client import SdkClientModel
from agent.types import INVALID_JSON, RAW_INPUT, Block, Message, Request, StreamItem, ToolSpec
from kiln_errors.setting import whole_in

DEFAULT_MODEL = "gpt-4.1"
_WINDOWS = {"gpt-4.1": 1_047_576, "gpt-5": 400_000, "gpt-4o": 128_000}


def to_openai_tools(request: Request) -> list[dict[str, Any]]:
    """The built-ins in their fixed order, the same on every request. Deferred tools are never
    declared: ``tool_search`` results carry their schemas and ``call_tool`` runs them."""

    def one(spec: ToolSpec) -> dict[str, Any]:
        fn = {"name": spec.name, "description": spec.description, "parameters": spec.input_schema}
        return {"type": "function", "function": fn}

    return [one(t) for t in request.tools]


def to_openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for msg in messages:
        role, content = msg.get("role", "user"), msg.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
        elif role == "assistant":
            message = _assistant(content or [])
            if message["content"] is not None or message.get("tool_calls"):
                out.append(message)  # an empty reply is left out: the API refuses one
        else:
            # Tool results must directly follow the assistant's tool_calls, so they go first and
            # any text in the same message (status bar, user note) follows as a user message.
            texts: list[str] = []
            for block in content or []:
                if block.get("type") == "tool_result":
                    text = _result_text(block.get("content"))
                    if block.get("is_error") and not text.lower().startswith("error"):
                        text = f"Error: {text}"  # a tool's own "error: …" report is not doubled
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": block.get("tool_use_id", ""),
                            "content": text,
                        }
                    )
                elif block.get("type") == "text":
                    texts.append(str(block.get("text", "")))
            if texts:
                out.append({"role": role, "content": "\n\n".join(texts)})
    return out


def _assistant(content: list[Block]) -> dict[str, Any]:
    text = "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": _arguments_json(b)},
        }
        for b in content
        if b.get("type") == "tool_use"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _arguments_json(block: Block) -> str:
    """The arguments exactly as the model wrote them (key order, spacing, escapes) when the
    reply kept them: a server that caches the tokens it generated (llama.cpp, vLLM, Ollama)
    then reuses them on the next request; a re-serialised object would miss from there."""
    raw, value = block.get(RAW_INPUT), block.get("input")
    if isinstance(raw, str) and raw.strip():
        return raw
    if isinstance(value, dict) and set(value) == {INVALID_JSON}:
        return str(value[INVALID_JSON])  # send back exactly what the model wrote
    return json.dumps(value or {}, ensure_ascii=False)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b
        )
    return "" if content is None else str(content)


def build_params(request: Request, model: str, *, cache_key: bool = False) -> dict[str, Any]:
    """The JSON body for one streamed call; pure, so tests can compare bytes across turns.
    ``cache_key``: send the conversation's ``prompt_cache_key`` (OpenAI routes its prompt
    cache by it; the same value all session long)."""
    params: dict[str, Any] = {
        "model": model,
        "messages": to_openai_messages(request.system, stored_form(request.messages)),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    # Reasoning-family models refuse max_tokens; everything compatible accepts it otherwise.
    limit_key = (
        "max_completion_tokens" if model.startswith(("gpt-5", "o1", "o3", "o4")) else "max_tokens"
    )
    params[limit_key] = request.max_tokens
    tools = to_openai_tools(request)
    if tools:
        params["tools"] = tools
    if cache_key and request.cache_key:
        params["prompt_cache_key"] = request.cache_key
    return params


CACHE_KEY_VAR = "KILN_OPENAI_CACHE_KEY"


def sends_cache_key(base_url: str | None) -> bool:
    """Whether requests carry ``prompt_cache_key``: ``auto`` (the default) only to OpenAI's own
    API, since compatible servers may refuse a field they do not know (vLLM answered 400
    "extra_forbidden" to unknown fields until late 2024); ``on`` for any endpoint that takes it,
    ``off`` never."""
    value = os.environ.get(CACHE_KEY_VAR, "").strip().lower() or "auto"
    if value not in ("auto", "on", "off"):
        raise ConfigError(f"{CACHE_KEY_VAR} must be auto, on or off: {value!r}")
    if value != "auto":
        return value == "on"
    host = urlsplit(base_url).hostname if base_url else "api.openai.com"
    return host == "api.openai.com"


WINDOW_VAR = "KILN_CONTEXT_WINDOW"
MIN_WINDOW = 1024
MAX_WINDOW = 10_000_000  # tokens: past the largest window any model offers


def _window_from_env() -> int:
    """The window a compatible server was started with. Ollama (``num_ctx``, 2048 or 4096 by
    default) cuts a longer prompt from the front without an error, so the system prompt and
    the goal went unseen while Kiln, assuming 128,000 tokens, never compacted."""
    value = os.environ.get(WINDOW_VAR, "").strip()
    window = whole_in(value, MIN_WINDOW, MAX_WINDOW)
    if value and window is None:
        raise ConfigError(
            f"{WINDOW_VAR} must be a whole number of tokens from {MIN_WINDOW:,} to "
            f"{MAX_WINDOW:,}: {value[:40]!r}"
        )
    return window or 0


class OpenAIModel(SdkClientModel):
    name = "openai"
    key_var = "OPENAI_API_KEY"
    base_var = "OPENAI_BASE_URL"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
    ) -> None:
        self._init_endpoint(
            model=model,
            api_key=api_key,
            base_url=base_url,
            retry=retry,
            timeout=timeout,
            default_model=DEFAULT_MODEL,
            no_key_hint="export OPENAI_API_KEY=... (or OPENAI_BASE_URL=http://localhost:11434/v1 for Ollama)",
        )
        family = next(
            (f for f in sorted(_WINDOWS, key=len, reverse=True) if self.model.startswith(f)), None
        )
        self.context_window = (
            context_window or _window_from_env() or (_WINDOWS[family] if family else 128_000)
        )
        self.cache_key = sends_cache_key(self.base_url)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> OpenAIModel:
        return cls(
            model=config.get("model"),
            api_key=config.get("api_key"),
            base_url=config.get("base_url"),
            context_window=config.get("context_window"),
        )

    def _new_client(self) -> Any:
        from kiln_errors.settled_imports import settled_imports

        with settled_imports("openai"):  # ~1.7 s of CPU with the collector running
            import openai

            client = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
            _ = client.chat.completions  # ~500 modules imported on first use: here
        return client

    _no_stream_options = False  # the server refused ``stream_options`` once: leave it out

    def wire_body(self, request: Request) -> dict[str, Any]:
        """The JSON body this request goes out as (for the session's wire log)."""
        params = build_params(request, self.model, cache_key=self.cache_key)
        if self._no_stream_options:
            params.pop("stream_options", None)  # usage then only comes if the server sends it
        return params

    async def _once(self, request: Request) -> AsyncGenerator[StreamItem, None]:
        params = self.wire_body(request)
        state = ChunkAccumulator(self.model)
        client = self._sdk_client()
        try:
            async for item in self._relay(
                lambda: client.chat.completions.create(**params), state.feed
            ):
                yield item
            if state.finish is None:
                raise provider_error(
                    ServerError, "openai: the stream ended without a finish_reason", hint="retry"
                )
        except ProviderError as exc:
            exc.usage = state.usage  # type: ignore[attr-defined]  # billed before it failed
            if self._refused_stream_options(exc):
                exc.retryable = True  # at once, without the argument (older Azure, some proxies)
                exc.retry_after = 0.0  # type: ignore[attr-defined]
            raise
        for item in state.flush():
            yield item
        yield state.reply()

    def _refused_stream_options(self, exc: ProviderError) -> bool:
        if self._no_stream_options or getattr(exc, "status", None) not in (400, 422):
            return False
        self._no_stream_options = "stream_options" in str(exc)
        return self._no_stream_options
