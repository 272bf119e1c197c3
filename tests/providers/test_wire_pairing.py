"""The wire server refuses what both real APIs refuse about tool calls: a call not answered in
the very next message, or a result for no call of the message before it. Kiln's own requests
must therefore pair every call with its result (a compaction that split them once passed here
and failed against every real provider)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agent.testing.wire_server import WireServer

CALL_A = {"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "x"}}
RESULT_A = {"type": "tool_result", "tool_use_id": "a", "content": "ok"}
RESULT_B = {"type": "tool_result", "tool_use_id": "b", "content": "ok"}
OPENAI_CALL = {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}


def _post(srv: WireServer, path: str, messages: list[dict[str, Any]]) -> httpx.Response:
    body = {"model": "m", "max_tokens": 10, "stream": True, "messages": messages}
    return httpx.post(srv.url + path, json=body, timeout=30)


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([{"role": "user", "content": "go"}, {"role": "assistant", "content": [CALL_A]},
          {"role": "user", "content": "next"}], "without tool_result blocks"),
        ([{"role": "user", "content": "go"}, {"role": "assistant", "content": [CALL_A]},
          {"role": "user", "content": [RESULT_A, RESULT_B]}], "unexpected tool_use_id"),
        ([{"role": "user", "content": [RESULT_A]}], "unexpected tool_use_id"),
    ],
)  # fmt: skip
def test_anthropic_unpaired_calls_and_results_are_400(messages: list, says: str) -> None:
    with WireServer(["never"]) as srv:
        reply = _post(srv, "/v1/messages", messages)
    assert reply.status_code == 400 and says in reply.text


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([{"role": "user", "content": "go"},
          {"role": "assistant", "content": None, "tool_calls": [OPENAI_CALL]},
          {"role": "user", "content": "next"}], "must be followed by tool messages"),
        ([{"role": "user", "content": "go"},
          {"role": "tool", "tool_call_id": "a", "content": "ok"}], "must be a response"),
    ],
)  # fmt: skip
def test_openai_unpaired_calls_and_results_are_400(messages: list, says: str) -> None:
    with WireServer(["never"]) as srv:
        reply = _post(srv, "/v1/chat/completions", messages)
    assert reply.status_code == 400 and says in reply.text


def test_paired_calls_are_answered_by_both_apis() -> None:
    anthropic = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [CALL_A]},
                 {"role": "user", "content": [RESULT_A]}]  # fmt: skip
    openai = [{"role": "user", "content": "go"},
              {"role": "assistant", "content": None, "tool_calls": [OPENAI_CALL]},
              {"role": "tool", "tool_call_id": "a", "content": "ok"}]  # fmt: skip
    with WireServer(["one", "two"]) as srv:
        assert _post(srv, "/v1/messages", anthropic).status_code == 200
        assert _post(srv, "/v1/chat/completions", openai).status_code == 200
