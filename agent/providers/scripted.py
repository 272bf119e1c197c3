"""A deterministic model that ships in the package, so the loop, the CLI and the editors can be
tested without a network or a real model.

A script is a list of steps, consumed in order:

- ``"text"`` or ``{"text": "...", "tool_calls": [{"name": "read_file", "input": {...}}]}`` — a
  reply (``arguments`` may be given instead of ``input``, as a dict or a raw JSON string);
- ``{"raise": "rate_limit" | "server" | "overloaded" | "unavailable" | "bad_request" |
  "partial", "message"?: ..., "text"?: ...}`` — fail the way a provider would;
- ``{"sleep": seconds}`` — wait, then go on with the next step in the same call (a reply or
  error with ``"delay"`` waits before answering);
- ``{"wait_for": "path"}`` — wait until that file exists, then go on likewise (a test holds a
  turn open for as long as it needs and releases it by creating the file; ``"reached": "path"``
  alongside creates that file when the wait begins, so the test knows the request is held);
- a callable (Python only) that receives the ``Request`` and returns one of the above.

Any step may carry ``"match": "substring"`` (or ``"re:pattern"``): it is then taken only when
the latest user/tool text contains it; the first remaining step that matches is used. The same
step vocabulary drives the wire-format test server (``agent.testing.wire_server``).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
import json
import os
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from agent.errors import ConfigError, ProviderError, ProviderUnavailable, RateLimited, ServerError
from agent.providers.arguments import parse_arguments
from agent.providers.retry import (
    NO_RETRY,
    RetryPolicy,
    provider_error,
    retrying_stream,
)
from agent.types import (
    Block,
    Message,
    ModelReply,
    Request,
    StreamItem,
    TextDelta,
    ToolCallDelta,
    Usage,
    canonical_json,
)
from skills_registry import config_file, json_limits

Step = Any  # str | dict | Callable[[Request], str | dict]


class ScriptExhausted(ProviderError):
    hint = "add more steps to the script (ScriptedModel.enqueue or the KILN_SCRIPT file)"


class Script:
    """A thread-safe queue of steps; the wire server shares it across handler threads."""

    def __init__(self, steps: Iterable[Step] = ()) -> None:
        self._steps: list[Step] = list(steps)
        self._lock = threading.Lock()

    def enqueue(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    def take(self, latest_text: str) -> Step:
        with self._lock:
            for i, step in enumerate(self._steps):
                if _matches(step, latest_text):
                    return self._steps.pop(i)
        wanted = latest_text[-80:].replace("\n", " ")
        raise ScriptExhausted(
            f"the script has no step left for this request (latest text: {wanted!r})"
        )


def _matches(step: Step, text: str) -> bool:
    pattern = step.get("match") if isinstance(step, dict) else None
    if not pattern:
        return True
    if pattern.startswith("re:"):
        return re.search(pattern[3:], text) is not None
    return pattern in text


def latest_user_text(messages: list[Message]) -> str:
    """Text of everything after the last assistant message (user text and tool results).

    Works on both wire shapes: Anthropic blocks and OpenAI ``role: tool`` messages.
    """
    tail: list[Message] = []
    for msg in reversed(messages):
        if msg.get("role") == "assistant":
            break
        tail.append(msg)
    return "\n".join(_text_of(m.get("content")) for m in reversed(tail))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if "text" in block:
                    parts.append(str(block["text"]))
                elif block.get("type") == "tool_result":
                    parts.append(_text_of(block.get("content")))
        return "\n".join(parts)
    return ""


_HINT = "set KILN_SCRIPT to a JSON file"
SCRIPT_MAX = 32 * 1024 * 1024  # bytes, as a task file (`kiln run --task-file`)


def load_script(source: str | os.PathLike[str]) -> list[Step]:
    """Read a JSON list of steps; a clear ``ConfigError`` for anything else. A regular file of
    at most ``SCRIPT_MAX`` bytes: ``KILN_SCRIPT=/dev/zero`` was read until memory ran out, a
    FIFO held the run before it began, and ``[[[…`` ended it in a ``RecursionError``."""
    path = Path(source)
    try:
        data = json_limits.loads(config_file.read_text(path, SCRIPT_MAX))
    except FileNotFoundError:
        raise ConfigError(f"script file not found: {path}", hint=_HINT) from None
    except UnicodeDecodeError:
        raise ConfigError(f"script file {path} is not UTF-8 text", hint=_HINT) from None
    except ValueError as exc:  # bad JSON, or nested past json_limits.MAX_DEPTH
        raise ConfigError(
            f"script file {path} is not valid JSON: {exc}", hint="a script is a JSON list of steps"
        ) from None
    except OSError as exc:  # a folder, a FIFO, a file it may not read: a setting, not a failure
        raise ConfigError(
            f"cannot read script file {path}: {exc.strerror or exc}", hint=_HINT
        ) from None
    if not isinstance(data, list):
        raise ConfigError(
            f"script file {path} must hold a JSON list of steps", hint='e.g. ["hello"]'
        )
    # an unknown error kind found at the first model call left a session the run never used
    for step in data:
        kind = step.get("raise") if isinstance(step, dict) else None
        if kind is not None and kind != "partial":
            try:
                error_for(str(kind))
            except ConfigError as exc:
                raise ConfigError(f"script file {path}: {exc}", hint=exc.hint) from None
    return data


def reply_tool_calls(step: dict[str, Any]) -> list[dict[str, Any]]:
    """The step's tool calls as ``{"id"?, "name", "raw"}`` where ``raw`` is the JSON text sent."""
    calls = []
    for call in step.get("tool_calls") or []:
        args = call.get("input", call.get("arguments", {}))
        raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        calls.append({"id": call.get("id"), "name": call["name"], "raw": raw})
    return calls


def error_for(kind: str, message: str | None = None) -> ProviderError:
    """The exception a ``{"raise": kind}`` step stands for."""
    msg = message or f"scripted {kind.replace('_', ' ')} error"
    if kind == "rate_limit":
        return provider_error(
            RateLimited, msg, hint="wait a moment and retry", retry_after=0.0, status=429
        )
    if kind in ("server", "overloaded"):
        return provider_error(
            ServerError, msg, hint="the provider had a problem; retry later", status=500
        )
    if kind == "unavailable":
        return ProviderUnavailable(msg, hint="check the provider configuration")
    if kind == "bad_request":
        return provider_error(ProviderError, msg, hint="the request was rejected", status=400)
    raise ConfigError(
        f"unknown scripted error kind {kind!r}",
        hint="use rate_limit, server, overloaded, unavailable, bad_request or partial",
    )


def scripted_usage(
    request: Request, message: Message, previous: list[Request] | None = None
) -> Usage:
    """Deterministic usage: canonical-JSON characters / 4.

    With ``previous`` requests given, the longest common prefix with any of them counts as a
    cache read, the way a provider's prompt cache would.
    """
    total = len(canonical_json(request.to_dict())) // 4
    cached = 0
    if previous:
        text = _prompt_order(request)
        cached = max(common_prefix_len(text, _prompt_order(old)) for old in previous) // 4
        cached = min(cached, total)
    return Usage(
        input_tokens=total - cached,
        cache_read_tokens=cached,
        output_tokens=max(1, len(canonical_json(message["content"])) // 4),
    )


def _prompt_order(request: Request) -> str:
    """Tools, system, then the conversation: the order a prompt cache sees them (deferred tools
    are left out, as Anthropic's ``defer_loading`` keeps them out of the prefix)."""
    parts = [[t.to_dict() for t in request.tools], request.system, request.messages]
    return "".join(canonical_json(p) for p in parts)


def common_prefix_len(a: str | bytes, b: str | bytes) -> int:
    """Length of the longest common prefix, by bisection on C-speed slice comparisons."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class ScriptedModel:
    """``Model`` driven by a script; records every ``Request`` it receives in ``requests``."""

    name = "scripted"

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        model: str = "scripted",
        context_window: int = 200_000,
        simulate_cache: bool = False,
        retry: RetryPolicy = NO_RETRY,
    ) -> None:
        self.script = Script(steps)
        self.model = model
        self.context_window = context_window
        self.simulate_cache = simulate_cache
        self.retry = retry
        self.requests: list[Request] = []
        self._ids = 0

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ScriptedModel:
        steps = config.get("script")
        source = config.get("script_file") or os.environ.get("KILN_SCRIPT")
        if steps is None and source:
            steps = load_script(source)
        if steps is None:
            raise ConfigError(
                "the scripted provider needs a script",
                hint="set KILN_SCRIPT=path/to/script.json (a JSON list of replies)",
            )
        return cls(steps, model=config.get("model") or "scripted")

    def enqueue(self, *steps: Step) -> None:
        self.script.enqueue(*steps)

    async def aclose(self) -> None:
        """Nothing to release; present so callers can close any provider alike."""

    def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        return retrying_stream(lambda: self._once(request), policy=self.retry, provider=self.name,
                               before_retry=request.before_retry)  # fmt: skip

    async def _once(self, request: Request) -> AsyncGenerator[StreamItem, None]:
        previous = list(self.requests)
        self.requests.append(copy.deepcopy(dataclasses.replace(request, before_retry=None)))
        step = await self._next_reply(request)
        if step.get("raise") == "partial":
            # Stream some text first so the caller has seen output, then break off.
            yield TextDelta(str(step.get("text", "The answer is")))
            raise provider_error(ServerError, step.get("message") or "scripted stream broke off")
        blocks: list[Block] = []
        if step.get("text"):
            text = str(step["text"])
            for chunk in _chunks(text):
                yield TextDelta(chunk)
            blocks.append({"type": "text", "text": text})
        for call in reply_tool_calls(step):
            self._ids += 1
            call_id = call["id"] or f"call_{self._ids}"
            yield ToolCallDelta(call_id, call["name"])
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": call["name"],
                    "input": parse_arguments(call["raw"]),
                }
            )
        message: Message = {"role": "assistant", "content": blocks}
        usage = scripted_usage(request, message, previous if self.simulate_cache else None)
        stop = step.get("stop_reason") or ("tool_use" if step.get("tool_calls") else "end_turn")
        yield ModelReply(message=message, usage=usage, stop_reason=stop, model=self.model)

    async def _next_reply(self, request: Request) -> dict[str, Any]:
        while True:
            step = self.script.take(latest_user_text(request.messages))
            if callable(step):
                step = step(request)
                if inspect.isawaitable(step):
                    step = await step
            if isinstance(step, str):
                return {"text": step}
            if not isinstance(step, dict):
                raise ConfigError(
                    f"a script step must be a string or an object, got {type(step).__name__}"
                )
            if "sleep" in step and not ({"text", "tool_calls", "raise"} & step.keys()):
                await asyncio.sleep(float(step["sleep"]))
                continue
            if "wait_for" in step:
                if step.get("reached"):  # tells the test the request is here and held
                    Path(step["reached"]).touch()
                while not Path(step["wait_for"]).exists():
                    await asyncio.sleep(0.02)
                continue
            # A reply (or error) may itself wait first: "delay", or "sleep" given alongside it.
            await asyncio.sleep(float(step.get("delay") or step.get("sleep") or 0))
            if "raise" in step:
                if step["raise"] == "partial":
                    return step
                raise error_for(str(step["raise"]), step.get("message"))
            return step


def _chunks(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
