"""The stdio guard's part of ``$/cancel_request`` (the end-to-end case is in test_acp_sdk_cancel.py)."""

from __future__ import annotations

from lsp_server.acp.cancel_request import (
    EXTENSION_METHOD,
    REQUEST_ID_KEY,
    PromptRequests,
    route,
)


def test_prompts_are_tagged_with_their_id_and_cancels_renamed() -> None:
    prompt = {"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
              "params": {"sessionId": "s", "prompt": [], "_meta": {"client": 1}}}  # fmt: skip
    tagged = route(prompt)
    assert tagged["params"]["_meta"] == {"client": 1, REQUEST_ID_KEY: 7}
    assert prompt["params"]["_meta"] == {"client": 1}  # the parsed original is not changed
    cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}}
    assert route(cancel) == {**cancel, "method": EXTENSION_METHOD}


def test_everything_else_passes_as_the_same_object() -> None:
    others = [
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w"}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}},
        # A request named like the notification is the SDK's to refuse (-32601), unchanged.
        {"jsonrpc": "2.0", "id": 2, "method": "$/cancel_request", "params": {"requestId": 1}},
        # Malformed prompts are left for the SDK's -32602, whose error echoes them as sent.
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [], "_meta": "x"},
        },  # fmt: skip
        {"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": "s"}},
        {"jsonrpc": "2.0", "id": 4, "result": {}},
    ]
    for message in others:
        assert route(message) is message


def test_prompt_requests_name_the_running_turns_session_until_it_ends() -> None:
    prompts = PromptRequests()
    key = prompts.started(7, "s1")
    assert prompts.session_of({"requestId": 7}) == "s1"
    assert prompts.session_of({"requestId": "7"}) is None  # ids are compared as JSON values
    assert prompts.session_of({"other": 7}) is None and prompts.session_of(None) is None
    prompts.ended(key)
    assert prompts.session_of({"requestId": 7}) is None  # finished: a late cancel changes nothing
    assert prompts.started(None, "s1") is None  # a prompt the guard did not tag is not tracked
