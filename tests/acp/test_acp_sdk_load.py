"""`session/load` of `kiln acp` through the official ACP TypeScript SDK client.

A loaded session replays its conversation (attachments as the blocks the client sent, a limit's
stop note, nothing of a command) and goes on where it was; every frame checked against the
schema (the runner is ``tests/acp/sdk_runner.py``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.acp.sdk_runner import Conformance, call

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_load_replays_the_conversation_then_continues(conformance: Conformance) -> None:
    steps = [
        call("read_file", path="notes.txt"),
        "The notes are about disks.",
        {"match": "still there", "text": "Still here."},
    ]
    report = conformance.run("load", steps, text="summarise notes.txt")
    assert report.result["loadSession"] is True
    assert report.result["loaded"]["modes"]["currentModeId"] == "ask"
    replayed = [u["update"] for u in report.result["replayed"]]  # all before the load answer
    assert [u["sessionUpdate"] for u in replayed] == [
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert replayed[0]["content"]["text"] == "summarise notes.txt"
    assert replayed[1]["kind"] == "read"
    assert replayed[3]["content"]["text"] == "The notes are about disks."
    assert report.result["response"] == {"stopReason": "end_turn"}
    assert report.text().endswith("Still here.")
    assert len(report.connections) == 2  # the load ran in a fresh `kiln acp` process


def test_load_replays_attachments_as_the_blocks_the_client_sent(conformance: Conformance) -> None:
    """A replayed prompt showed the user `<reference path="notes.txt">…</reference>` markup in
    place of the files and selections they attached; it now comes back as content blocks."""
    notes = conformance.workspace / "notes.txt"
    missing = conformance.workspace / "gone.txt"
    sent = [
        {"type": "text", "text": "compare these"},
        {"type": "resource_link", "uri": notes.as_uri(), "name": "notes.txt"},
        {"type": "resource_link", "uri": missing.as_uri(), "name": "gone.txt"},
        {"type": "resource", "resource": {"uri": "zed:///agent/selection", "text": "picked"}},
    ]
    steps = ["Compared.", {"match": "still there", "text": "Still here."}]
    report = conformance.run("load", steps, prompt=sent)
    replayed = [u["update"] for u in report.result["replayed"]]
    assert [u["content"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"] == [
        {"type": "text", "text": "compare these"},
        {"type": "resource", "resource": {"uri": notes.as_uri(), "text": notes.read_text()}},
        {"type": "resource_link", "uri": missing.as_uri(), "name": "gone.txt"},
        {"type": "resource", "resource": {"uri": "zed:///agent/selection", "text": "picked"}},
    ]
    assert "<reference" not in json.dumps(replayed)
    assert report.result["response"] == {"stopReason": "end_turn"}


def test_a_loaded_session_shows_why_a_limit_stopped_its_turn(conformance: Conformance) -> None:
    """The live turn's last message said "Stopped: step limit reached (1)."; a `session/load`
    replayed the turn without it (the note was not stored), as if it had simply ended."""
    steps = [call("list_files"), {"match": "still there", "text": "Still here."}]
    report = conformance.run("load", steps, sessionMeta={"kiln": {"maxSteps": 1}})
    assert report.result["firstResponse"] == {"stopReason": "max_turn_requests"}
    live = [u["update"] for u in report.result["live"]]
    replayed = [u["update"] for u in report.result["replayed"]]

    def shown(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return [(u["sessionUpdate"], u["content"]["text"]) for u in updates if "chunk" in
                u["sessionUpdate"] and u["sessionUpdate"] != "user_message_chunk"]  # fmt: skip

    stopped = ("agent_message_chunk", "\n\nStopped: step limit reached (1).\n")
    assert shown(live)[-1] == stopped
    assert shown(replayed) == [("agent_thought_chunk", "step limit reached (1)\n"), stopped]
    assert shown(live)[-2:] == shown(replayed)  # the turn ends as it did live
    assert report.result["response"] == {"stopReason": "end_turn"}


def test_a_model_switched_by_command_is_kept_when_the_session_is_loaded(
    conformance: Conformance,
) -> None:
    steps = [{"match": "still there", "text": "Still here."}]
    report = conformance.run("load", steps, text="/model claude-haiku-4-5")
    assert report.result["response"] == {"stopReason": "end_turn"}
    [body] = report.wire.bodies("/v1/messages")
    assert body["model"] == "claude-haiku-4-5"
    # A command is not part of the conversation: the load replays nothing of it.
    assert [u["update"]["sessionUpdate"] for u in report.result["replayed"]] == []
