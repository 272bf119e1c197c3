"""Cancelling `kiln acp` turns through the official ACP TypeScript SDK client.

`session/cancel` mid-turn and while permission questions are open, `$/cancel_request` on a
running prompt, and stdin closing mid-call; every frame checked against the schema (the runner
is ``tests/acp/sdk_runner.py``).
"""

from __future__ import annotations

import subprocess

import pytest

from tests.acp.sdk_runner import Conformance, call

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# The turn's second model call, held until the scenario ends, and only that one: a cancel that
# lands before the call is made (the scenario cancels at the plan update) left this step in the
# script, and the next question took it and held to the scenario's timeout.
HELD_CALL = r"re:\A(?![\s\S]*still there)[\s\S]*todo list updated"


def test_cancel_mid_turn(conformance: Conformance) -> None:
    steps = [
        call("todo_write", items=[{"id": "1", "content": "wait", "status": "in_progress"}]),
        {"match": HELD_CALL, **conformance.hold},
        {"match": "still there", "text": "Yes, still here."},
    ]
    report = conformance.run("cancel", steps, at="plan")
    assert report.result["response"] == {"stopReason": "cancelled"}
    assert report.result["busy"]["code"] == -31002  # one turn at a time
    # Nothing of the cancelled turn arrives after its answer (the schema check enforces it for
    # every frame); the updates after it are the next turn's.
    assert report.result["after"] == {"stopReason": "end_turn"}
    later = [u["update"] for u in report.result["updatesAfterResponse"]]
    assert [u["sessionUpdate"] for u in later if u["sessionUpdate"] != "usage_update"] == [
        "agent_message_chunk"
    ]
    assert report.text() == "Yes, still here."


def test_cancel_while_a_permission_request_is_open(conformance: Conformance) -> None:
    steps = [
        call("run_command", command="echo ran > ran.txt"),
        {"match": "still there", "text": "Here."},
    ]
    report = conformance.run("cancel", steps, at="permission", answers=["hold"])
    assert report.result["response"] == {"stopReason": "cancelled"}
    assert not (conformance.workspace / "ran.txt").exists()
    [started] = report.updates("tool_call")
    ends = [
        u
        for u in report.updates("tool_call_update")
        if u["toolCallId"] == started["toolCallId"] and u.get("status")
    ]
    assert [u["status"] for u in ends] == ["failed"]


def test_cancel_while_two_edits_wait_for_answers(conformance: Conformance) -> None:
    """Two edits of one step are asked about at once; the cancel stops both, and a question
    that crossed the cancel on the wire is withdrawn (the schema check flags any question left
    unanswered, and any update of the turn after its answer)."""
    steps = [
        {"tool_calls": [
            {"name": "edit_file", "input": {"path": "app.py", "old_text": "'hello'", "new_text": "'hi'"}},
            {"name": "write_file", "input": {"path": "b.txt", "content": "x"}},
        ]},
        {"match": "still there", "text": "Here."},
    ]  # fmt: skip
    report = conformance.run("cancel", steps, at="permission", answers=["hold", "hold"])
    assert report.result["response"] == {"stopReason": "cancelled"}
    assert report.result["writes"] == []  # the editor writes edits; none was
    ends = [u["status"] for u in report.updates("tool_call_update") if u.get("status")]
    assert ends == ["failed", "failed"]
    assert report.result["after"] == {"stopReason": "end_turn"}


def test_cancel_request_on_a_running_prompt_cancels_the_turn(conformance: Conformance) -> None:
    """The SDK sends `$/cancel_request` when a request's cancellation signal fires; Kiln ignored
    it and the prompt ran on (here: until the held model call was released, never)."""
    steps = [
        call("todo_write", items=[{"id": "1", "content": "wait", "status": "in_progress"}]),
        {"match": HELD_CALL, **conformance.hold},
        {"match": "still there", "text": "Yes, still here."},
        {"match": "aborted at once", **conformance.hold},
    ]
    report = conformance.run("cancel_request", steps)
    assert report.result["response"] == {"stopReason": "cancelled"}
    assert report.methods("c2a").count("$/cancel_request") == 2
    assert report.result["after"] == {"stopReason": "end_turn"}
    assert report.text() == "Yes, still here."
    # A cancel sent right behind its prompt (the SDK does so for an already aborted signal)
    # reaches the turn: the server starts handlers in arrival order, so the prompt is noted
    # first. Were the cancel lost, the turn would hold on the model until the scenario failed.
    assert report.result["overtaken"] == {"response": {"stopReason": "cancelled"}}


def test_stdin_closing_mid_tool_call_closes_the_call_then_answers(
    conformance: Conformance,
) -> None:
    """docs/acp.md: a client that closes stdin gets its running turn cancelled and answered.
    The final `failed` update of the running command was dropped (the SDK refuses to send
    notifications once its input has ended), leaving the call running at the answer; the
    command's processes must not outlive `kiln acp` either."""
    token = f"kiln-hangup-{conformance.tmp.name}"
    command = f"sleep 3000; echo {token}"
    steps = [call("run_command", command=command), "never reached"]
    report = conformance.run("hangup", steps, sessionMeta={"kiln": {"mode": "yolo"}})
    assert report.result["response"] == {"stopReason": "cancelled"}
    [started] = report.updates("tool_call")
    statuses = [
        u["status"]
        for u in report.updates("tool_call_update")
        if u["toolCallId"] == started["toolCallId"] and u.get("status")
    ]
    assert statuses == ["in_progress", "failed"]
    left = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True)
    assert left.stdout == "", left.stdout
