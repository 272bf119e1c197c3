"""The embedded SmolLM2 model makes one real, grammar-constrained tool call."""

from __future__ import annotations

import pytest

from agent.providers import local_available
from agent.types import ModelReply, ToolCallDelta, user_message
from tests.providers.helpers import collect, make_request


@pytest.fixture
def local_model():
    if not local_available():
        pytest.skip("the local extra is not installed: pip install 'kiln-agent[local]'")
    from agent.providers.local import LocalModel

    return LocalModel(max_tokens=96)


@pytest.mark.local_model
@pytest.mark.slow
async def test_one_real_tool_call_repeatably(local_model) -> None:
    from agent.tools import builtin_tools

    request = make_request(user_message("Find where the function parse_config is defined."))
    # Kiln's real tool schemas (length/pattern constraints included) must yield a usable grammar
    request.tools[:] = [t.spec for t in builtin_tools()]
    schemas = {t.name: t.input_schema for t in request.tools}
    items = await collect(local_model.stream(request))
    reply = items[-1]
    assert (
        isinstance(reply, ModelReply)
        and reply.usage.input_tokens > 0
        and reply.usage.output_tokens > 0
    )
    block = reply.message["content"][0]
    if block["type"] == "tool_use":
        # the grammar guarantees a known tool with its required arguments
        assert set(schemas[block["name"]].get("required", [])) <= set(block["input"])
        assert [i.name for i in items if isinstance(i, ToolCallDelta)] == [block["name"]]
    else:
        assert block["type"] == "text" and block["text"]
    # greedy decoding with a fixed seed: the same prompt gives the same reply
    again = (await collect(local_model.stream(request)))[-1]
    strip = lambda m: [{k: v for k, v in b.items() if k != "id"} for b in m["content"]]  # noqa: E731
    assert strip(again.message) == strip(reply.message)
    # and llama.cpp's KV cache served the repeated prompt: reported as a cache read
    assert again.usage.cache_read_tokens > 0
    assert again.usage.total_input == reply.usage.total_input


def test_grammar_schema_keeps_structure_and_drops_expanding_constraints() -> None:
    from agent.providers.local_format import grammar_schema

    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "words"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "items": {
                "type": "array",
                "maxItems": 9,
                "items": {"type": "object", "properties": {"s": {"enum": ["a", "b"]}}},
            },
        },
        "required": ["query"],
        "additionalProperties": True,
    }
    assert grammar_schema(schema) == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"s": {"enum": ["a", "b"]}},
                    "additionalProperties": False,
                },
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def _with_discovery(specs: list) -> list:
    from agent.tools.deferred_tools import CallTool
    from agent.types import ToolSpec

    search = ToolSpec("tool_search", "find deferred tools", {"type": "object"})
    return [*specs, search, CallTool().spec]


def test_the_proxy_is_offered_only_for_deferred_tools_that_exist() -> None:
    from agent.providers.local_format import offered_tools
    from agent.tools import builtin_tools
    from agent.types import ToolSpec

    request = make_request(user_message("What does calc.py do?"))
    request.tools[:] = _with_discovery([t.spec for t in builtin_tools()])
    names = [t.name for t in offered_tools(request)]
    # no skill or MCP tools installed: nothing to search for, nothing to proxy
    assert "call_tool" not in names and "tool_search" not in names
    assert "read_file" in names
    # nor a sub-agent, a plan, memory or past sessions: places a 135M model only loops in
    assert not {"task", "todo_write", "remember", "search_sessions"} & set(names)
    assert {"read_file", "list_files", "search_code", "grep", "edit_file", "write_file",
            "run_command"} <= set(names)  # fmt: skip

    request.deferred_tools[:] = [
        ToolSpec("mcp__b", "b", {"type": "object"}),
        ToolSpec("mcp__a", "a", {"type": "object"}),
    ]
    offered = {t.name: t for t in offered_tools(request)}
    assert "tool_search" in offered
    assert offered["call_tool"].input_schema["properties"]["name"]["enum"] == ["mcp__a", "mcp__b"]
    # the request itself is not changed: its tools stay the cached prefix
    proxy = next(t for t in request.tools if t.name == "call_tool")
    assert "enum" not in proxy.input_schema["properties"]["name"]


def test_the_grammar_limits_call_tool_to_found_names() -> None:
    if not local_available():
        pytest.skip("the local extra is not installed: pip install 'kiln-agent[local]'")
    from agent.providers.local_format import build_grammar, offered_tools
    from agent.tools import builtin_tools
    from agent.types import ToolSpec

    request = make_request(user_message("x"))
    request.tools[:] = _with_discovery([t.spec for t in builtin_tools()])
    request.deferred_tools[:] = [ToolSpec("mcp__only_tool", "d", {"type": "object"})]
    grammar = build_grammar(offered_tools(request))
    assert "mcp__only_tool" in grammar
    assert "todo_write" not in grammar and "search_sessions" not in grammar
    assert '\\"call_tool\\"' in grammar or "call_tool" in grammar
