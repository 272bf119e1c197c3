"""What the embedded model reads and writes: the grammar that forces every reply to be one
JSON object (a call of an offered tool with that tool's argument schema, or an answer), the
conversation rendered as chat-template messages, and the reply parsed back into blocks."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from agent.providers.local_paths import path_schemas
from agent.tools.deferred_tools import PROXY_NAME
from agent.types import INVALID_JSON, Block, Request, ToolSpec

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


# Built-in tools a 135M model is not offered: a sub-agent would be the same small model for up to
# 15 more steps, and the plan, memory and past-session tools only gave it somewhere to loop (a
# plain question drew a sub-agent per step, or todo_write items whose ids ran to the output limit).
NOT_OFFERED = frozenset({"task", "todo_write", "remember", "search_sessions"})


def offered_tools(request: Request) -> list[ToolSpec]:
    """The tools a reply may call: the request's, less ``NOT_OFFERED``. A 135M model calls
    ``call_tool`` with names it invents, so the proxy's ``name`` is limited to the deferred tools
    that exist, and with none of them the proxy and ``tool_search`` are not offered at all."""
    deferred = sorted(t.name for t in request.deferred_tools)
    offered: list[ToolSpec] = []
    for spec in request.tools:
        if spec.name in NOT_OFFERED:
            continue
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


ANSWER_GRAMMAR = r"""
root ::= "{" ws "\"answer\"" ws ":" ws string ws "}"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ["\\/bfnrt] )* "\""
ws ::= [ ]?
"""


def build_grammar(
    tools: list[ToolSpec], files: list[str] | None = None, dirs: list[str] | None = None
) -> str:
    """GBNF for one reply: a call to one of ``tools`` (with its argument schema) or an answer.
    The file tools' ``path`` is one of ``files``/``dirs`` when given (``local_paths``)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    files, dirs = files or [], dirs or []
    alternatives: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": t.name},
                "arguments": path_schemas(t.name, grammar_schema(t.input_schema), files, dirs)
                or {"type": "object"},
            },
            "required": ["tool", "arguments"],
        }
        for t in tools
    ]
    alternatives.append(
        {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    )
    defs = {"files": {"enum": files}, "dirs": {"enum": dirs}}
    try:
        grammar = json_schema_to_gbnf(json.dumps({"$defs": defs, "oneOf": alternatives}))
        if len(grammar) <= _MAX_GRAMMAR_CHARS:
            return grammar
    except Exception:
        pass
    names = " | ".join(json.dumps(json.dumps(t.name)) for t in tools) or '"\\"none\\""'
    return _FALLBACK_GRAMMAR.replace("TOOLNAMES", names)


# Chat-template control tokens. llama-cpp-python renders the GGUF's chat template and tokenizes
# the prompt with special tokens parsed, so ``<|im_start|>system`` written in a file would open a
# system turn of its own. These are the shapes of the usual templates' tokens (ChatML, Llama 3,
# Phi, DeepSeek's fullwidth bars, Gemma, SmolLM2's StarCoder tokens); the loaded model's own
# control tokens are added to them (``control_tokens``), so ``<s>`` or ``[INST]`` is broken up
# only for a model that has it (in HTML, ``<s>`` is strikethrough).
_CONTROL_TOKEN = re.compile(
    r"<\|[^|<>\s]{1,64}\|>|<\uff5c[^\uff5c<>\s]{1,64}\uff5c>|<(?:start|end)_of_turn>"
    r"|<(?:repo_?name|file_sep|filename|gh_stars|issue_(?:start|comment|closed)"
    r"|jupyter_(?:start|text|code|output|script)|empty_output)>"
)
JOINER = "\u2060"  # a word joiner: invisible, and no tokenizer's control token holds one


def control_tokens(llama: Any) -> tuple[str, ...]:
    """The texts of the loaded model's control tokens (its chat template's turn markers), longest
    first; none when this llama-cpp-python does not say."""
    import llama_cpp

    try:
        vocab = llama_cpp.llama_model_get_vocab(llama.model)
        found = {
            llama_cpp.llama_vocab_get_text(vocab, i).decode("utf-8", "replace")
            for i in range(llama.n_vocab())
            if llama_cpp.llama_vocab_get_attr(vocab, i) & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
        }
    except (AttributeError, TypeError, ValueError):
        return ()
    kept = (t for t in found if len(t) > 1 and t.isprintable() and not t.isspace())
    return tuple(sorted(kept, key=lambda t: (-len(t), t)))


def inert_controls(text: str, controls: tuple[str, ...] = ()) -> str:
    """``text`` with a word joiner after the first character of each control token in it
    (``<\u2060|im_start|>``): the model reads the same characters, the tokenizer no token."""
    return _controls(controls).sub(lambda m: m.group()[0] + JOINER + m.group()[1:], text)


@lru_cache(maxsize=8)
def _controls(controls: tuple[str, ...]) -> re.Pattern[str]:
    if not controls:
        return _CONTROL_TOKEN
    return re.compile("|".join([*map(re.escape, controls), _CONTROL_TOKEN.pattern]))


def render_messages(
    request: Request, tools: list[ToolSpec], controls: tuple[str, ...] = ()
) -> list[dict[str, str]]:
    """The conversation as chat-template messages; tool calls shown as the JSON the model writes.
    Every message's text has its control tokens broken up (``inert_controls``, with the model's
    own ``controls``): a file, a tool's description or the user's prompt holds text only."""
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
    return [{"role": m["role"], "content": inert_controls(m["content"], controls)} for m in chat]


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
        return _cut_reply(raw, call_id), "max_tokens"
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


_CUT_CALL = re.compile(r'\s*\{\s*"tool"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*', re.S)
_CUT_ANSWER = re.compile(r'\s*\{\s*"answer"\s*:\s*"', re.S)
_CUT_NAME = re.compile(r'\s*\{\s*"t', re.S)  # a call begun, cut before its arguments
CUT_IN_NAME = "a tool call was cut before its name was complete, so nothing was run"
CUT_AT_START = "it was cut before it said anything"


def cut_short(raw: str) -> str:
    """Why a reply cut at the output limit holds nothing to show or run (``{ "tool":``, ``{``),
    in words for the cut-off note; "" when it holds a call or an answer's text."""
    if _CUT_CALL.match(raw) or _CUT_ANSWER.match(raw) or not raw.lstrip().startswith("{"):
        return ""
    return CUT_IN_NAME if _CUT_NAME.match(raw) else CUT_AT_START


def _cut_reply(raw: str, call_id: str) -> list[Block]:
    """A reply cut at the output limit, as the other providers give one: a call whose arguments
    are kept raw (the tool runner tells the model they are incomplete), or the answer's text so
    far; never the grammar's JSON shown as the answer: cut before a call's name or an answer's
    text, nothing (``cut_short`` says why)."""
    call = _CUT_CALL.match(raw)
    if call:
        name = str(json.loads(call.group(1)))
        args = {INVALID_JSON: raw[call.end() :]}
        return [{"type": "tool_use", "id": call_id, "name": name, "input": args}]
    answer = _CUT_ANSWER.match(raw)
    if answer:
        rest = raw[answer.end() :]
        for cut in range(min(len(rest), 6) + 1):  # a half-written escape at the end
            try:
                return [{"type": "text", "text": str(json.loads(f'"{rest[: len(rest) - cut]}"'))}]
            except json.JSONDecodeError:
                continue
    if cut_short(raw):
        return []
    return [{"type": "text", "text": raw}]
