"""`kiln acp` driven by the official ACP TypeScript SDK, every frame checked against the schema.

Each test runs one scenario of ``tests/acp/sdk_client/run.mjs``: a Node client built on
``@agentclientprotocol/sdk`` starts `kiln acp`, talks to it like an editor would, and checks
every message both ways against the protocol's published JSON schema (unknown fields
included) and its ordering rules. The model is the scripted wire server behind the real
Anthropic SDK. The tests assert what the client saw, what reached the model and the disk.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent.turn import STUCK_LIMIT
from tests.acp.sdk_runner import SDK_CLIENT, Conformance, call, node_for_sdk_client
from tests.registry.conftest import make_skill

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

APP = "def greet():\n    return 'hello'\n"


def test_the_schema_checker_flags_what_it_should() -> None:
    """The checker's own tests: each rule fails on a crafted bad exchange (so a clean report
    from a real run means something)."""
    node = node_for_sdk_client()
    done = subprocess.run([node, "--test", "schema_check.test.mjs"], cwd=SDK_CLIENT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# pass 10" in done.stdout


def test_initialize_negotiates_version_and_capabilities(conformance: Conformance) -> None:
    report = conformance.run("handshake", [], otherVersions=[2])
    init = report.result["initialize"]
    # ACP: the requested version if the agent speaks it, else the latest it speaks (1).
    assert {v: r["protocolVersion"] for v, r in init.items()} == {"1": 1, "2": 1}
    caps = init["1"]["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"embeddedContext": True}  # no image, no audio
    assert caps["sessionCapabilities"] == {"list": {}}
    assert init["1"]["authMethods"] == []
    assert init["1"]["agentInfo"]["name"] == "kiln"
    session = report.result["newSession"]
    assert session["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in session["modes"]["availableModes"]] == ["ask", "auto-edit", "yolo"]
    assert [s["sessionId"] for s in report.result["list"]["sessions"]] == [session["sessionId"]]
    errors = report.result["errors"]
    assert errors["secondInitialize"]["code"] == -32600
    assert errors["beforeInitialize"]["code"] == -32600
    # The client advertised terminals; docs/acp.md says Kiln runs commands itself.
    assert not [m for m in report.methods("a2c") if m.startswith("terminal/")]


def test_prompt_streams_chunks_and_ends_the_turn(conformance: Conformance) -> None:
    reply = "Here is a reply long enough to arrive in several streamed deltas."
    report = conformance.run("prompt", [reply], text="say something")
    assert report.result["response"] == {"stopReason": "end_turn"}
    assert report.text() == reply
    [usage] = report.updates("usage_update")
    assert usage["used"] > 0 and usage["size"] > 0 and usage["cost"]["currency"] == "USD"
    assert "say something" in report.sent_to_model()


def test_two_sessions_run_turns_at_once_each_with_its_own_updates(conformance: Conformance) -> None:
    steps = [
        # The model is slower on the first, so the second turn runs inside it (nothing below
        # depends on the timing: each session must get its own text either way).
        {"match": "first session", "delay": 0.3, "text": "Answer for the first."},
        {"match": "second session", "text": "Answer for the second."},
    ]
    report = conformance.run("two_sessions", steps)
    assert report.result["responses"] == [{"stopReason": "end_turn"}] * 2
    assert report.result["texts"] == ["Answer for the first.", "Answer for the second."]


def test_a_turn_ending_on_a_limit_closes_its_calls(conformance: Conformance) -> None:
    """Kiln's step limit is ACP's `max_turn_requests`; the calls of the last step still end
    (the schema check flags a tool call left running at the answer)."""
    steps = [call("list_files"), call("list_files"), "never reached"]
    report = conformance.run("prompt", steps, sessionMeta={"kiln": {"maxSteps": 1}})
    assert report.result["response"] == {"stopReason": "max_turn_requests"}
    assert [u["status"] for u in report.updates("tool_call_update") if u.get("status")] == [
        "in_progress",  # ACP's lifecycle: pending (the tool_call), running, done
        "completed",
    ]
    assert "never reached" not in report.text()
    # the note `kiln run` prints is the turn's last visible message, not only a thought
    assert report.text().endswith("Stopped: step limit reached (1).\n")


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


def test_a_stuck_turn_ends_as_max_turn_requests(conformance: Conformance) -> None:
    """A turn ended because one call failed the same way over and over (Kiln's
    `repeated_failure`) reaches the client as a stop reason ACP allows."""
    steps = [*[call("list_files", path="list_files")] * STUCK_LIMIT, "never reached"]
    report = conformance.run("prompt", steps)
    assert report.result["response"] == {"stopReason": "max_turn_requests"}
    assert len(report.wire.requests) == STUCK_LIMIT and "never reached" not in report.text()
    assert report.text() == (
        f"\n\nStopped: list_files failed the same way {STUCK_LIMIT} times in a row "
        "(list_files is not a directory).\n"
    )


def test_a_provider_failure_is_shown_and_ends_the_turn(conformance: Conformance) -> None:
    report = conformance.run("prompt", [{"error": 400, "message": "prompt is too long"}])
    assert report.result["response"] == {"stopReason": "end_turn"}  # docs/acp.md: no error reason
    assert "Error: " in report.text() and "prompt is too long" in report.text()


def test_file_reads_go_through_the_clients_buffer(conformance: Conformance) -> None:
    notes = str(conformance.workspace / "notes.txt")
    steps = [call("read_file", path="notes.txt"), "I read the buffer."]
    report = conformance.run("prompt", steps, buffers={notes: "CLIENT-BUFFER unsaved line\n"})
    assert report.result["response"]["stopReason"] == "end_turn"
    assert notes in report.result["reads"]
    sent = report.sent_to_model()
    assert "CLIENT-BUFFER unsaved line" in sent and "disk text of the notes" not in sent
    [started] = report.updates("tool_call")
    assert started["kind"] == "read" and started["locations"] == [{"path": notes}]
    assert started["status"] == "pending"
    statuses = [u["status"] for u in report.updates("tool_call_update") if u.get("status")]
    assert statuses == ["in_progress", "completed"]


def test_paths_outside_the_workspace_reach_neither_the_client_nor_its_follow_along(
    conformance: Conformance, tmp_path: Path
) -> None:
    """Refused reads and edits outside the workspace are never asked of the client (the schema
    check flags any fs/* outside the session folder), and their tool calls announce no location
    there: a client following the agent would have opened /etc/hostname in a tab."""
    (tmp_path / "secret.txt").write_text("SECRET\n")
    steps = [
        {"tool_calls": [
            {"name": "read_file", "input": {"path": "../secret.txt"}},
            {"name": "read_file", "input": {"path": "/etc/hostname"}},
            {"name": "edit_file", "input": {"path": "../secret.txt", "old_text": "SECRET", "new_text": "x"}},
        ]},
        "Refused.",
    ]  # fmt: skip
    report = conformance.run("prompt", steps)
    assert report.result["reads"] == [] and report.result["writes"] == []
    assert report.result["permissions"] == []
    started = report.updates("tool_call")
    assert len(started) == 3 and all(u["locations"] == [] for u in started), started
    ended = [u for u in report.updates("tool_call_update") if u.get("status") != "in_progress"]
    assert [u["status"] for u in ended] == ["failed"] * 3
    assert (tmp_path / "secret.txt").read_text() == "SECRET\n"


def test_an_approved_edit_is_written_by_the_client(conformance: Conformance) -> None:
    app = str(conformance.workspace / "app.py")
    steps = [call("edit_file", path="app.py", old_text="'hello'", new_text="'hi'"), "Edited."]
    report = conformance.run("permission", steps, answers=["allow_once"])
    assert report.result["response"]["stopReason"] == "end_turn"
    [asked] = report.result["permissions"]
    assert [o["kind"] for o in asked["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    [diff] = asked["toolCall"]["content"]
    assert diff == {
        "type": "diff",
        "path": app,
        "oldText": APP,
        "newText": APP.replace("hello", "hi"),
    }
    assert report.result["writes"] == [{"path": app, "content": APP.replace("hello", "hi")}]
    assert (
        Path(app).read_text() == APP
    )  # the editor owns the file: its buffer changed, not the disk
    assert report.text() == "Edited."


def test_a_rejected_edit_changes_nothing(conformance: Conformance) -> None:
    steps = [call("write_file", path="app.py", content="overwritten\n"), "Understood."]
    report = conformance.run("permission", steps, answers=["reject_once"])
    assert report.result["response"]["stopReason"] == "end_turn"
    assert len(report.result["permissions"]) == 1
    assert report.result["writes"] == []
    assert (conformance.workspace / "app.py").read_text() == APP
    [ended] = [u for u in report.updates("tool_call_update") if u.get("status")]
    assert ended["status"] == "failed"
    assert "permission denied" in report.sent_to_model()


def test_a_cancelled_permission_answer_is_not_a_users_no(conformance: Conformance) -> None:
    """ACP's `cancelled` outcome means the turn was cancelled before anyone answered: the
    action is refused, but neither the user nor the model is told that someone declined."""
    steps = [call("write_file", path="app.py", content="overwritten\n"), "Noted."]
    report = conformance.run("permission", steps, answers=["cancelled"])
    assert report.result["response"]["stopReason"] == "end_turn"
    assert report.result["writes"] == [] and (conformance.workspace / "app.py").read_text() == APP
    thought = report.text("agent_thought_chunk")
    assert "the permission request was cancelled" in thought and "declined" not in thought
    sent = report.sent_to_model()
    assert "the permission request was cancelled" in sent and "declined" not in sent


def test_without_fs_capabilities_kiln_uses_the_disk(conformance: Conformance) -> None:
    new = conformance.workspace / "new.txt"
    steps = [call("write_file", path="new.txt", content="from the agent\n"), "Written."]
    report = conformance.run("permission", steps, answers=["allow_once"], fs=False)
    assert report.result["response"]["stopReason"] == "end_turn"
    assert new.read_text() == "from the agent\n"
    assert not [m for m in report.methods("a2c") if m.startswith("fs/")]
    # A new file's diff has no old text (ACP: oldText omitted or null for new files).
    [diff] = report.result["permissions"][0]["toolCall"]["content"]
    assert diff["type"] == "diff" and diff["newText"] == "from the agent\n"
    assert diff.get("oldText") is None


def test_cancel_mid_turn(conformance: Conformance) -> None:
    steps = [
        call("todo_write", items=[{"id": "1", "content": "wait", "status": "in_progress"}]),
        conformance.hold,
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
        conformance.hold,
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


def test_set_mode_switches_what_asks(conformance: Conformance) -> None:
    app = str(conformance.workspace / "app.py")
    steps = [call("edit_file", path="app.py", old_text="'hello'", new_text="'hi'"), "Edited."]
    report = conformance.run("set_mode", steps, modes=["yolo", "auto-edit"])
    assert report.result["switched"] == {"yolo": {}, "auto-edit": {}}
    assert report.result["unknown"]["code"] == -32602
    assert report.result["permissions"] == []  # auto-edit: edits do not ask
    assert report.result["writes"] == [{"path": app, "content": APP.replace("hello", "hi")}]
    [listed] = report.result["listed"]["sessions"]
    assert listed["_meta"]["kiln"]["mode"] == "auto-edit"


def test_errors_carry_the_protocols_codes(conformance: Conformance) -> None:
    report = conformance.run("errors", ["Still serving."])
    codes = {name: error["code"] for name, error in report.result["errors"].items()}
    assert codes == {
        "promptUnknown": -32002,  # ACP's "resource not found"
        "setModeUnknown": -32002,
        "loadUnknown": -32002,
        "relativeCwd": -32602,
        "promptWithoutBlocks": -32602,
        "cwdNotAString": -32602,
        "unknownMethod": -32601,
        "authenticate": -32602,  # no auth method is advertised
        "imageBlock": -32602,  # promptCapabilities.image is not advertised
        "audioBlock": -32602,  # nor promptCapabilities.audio
    }
    assert (
        report.result["errors"]["audioBlock"]["message"] == "unsupported prompt block type 'audio'"
    )
    assert report.result["authMethods"] == []
    # Hints name ACP methods, not the `kiln lsp` ones.
    assert all("kiln/" not in str(e.get("data")) for e in report.result["errors"].values())
    assert report.result["response"] == {"stopReason": "end_turn"}


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


def test_a_permission_question_kiln_stops_waiting_for_is_withdrawn(
    conformance: Conformance,
) -> None:
    """A question left unanswered until the timeout was refused, but the client's dialog stayed
    open (and a late "allow" went nowhere): Kiln now withdraws it with ACP's `$/cancel_request`
    for that request."""
    steps = [call("write_file", path="app.py", content="overwritten\n"), "Gave up on it."]
    report = conformance.run(
        "permission", steps, answers=["hold"], sessionMeta={"kiln": {"permissionTimeout": 1}}
    )
    assert report.result["response"] == {"stopReason": "end_turn"}
    [asked] = report.result["permissions"]
    assert report.result["withdrawn"] == [asked["toolCall"]["toolCallId"]]
    [request_id] = [
        f["msg"]["id"]
        for c in report.connections
        for f in c["frames"]
        if f["dir"] == "a2c" and f["msg"].get("method") == "session/request_permission"
    ]
    cancels = [
        f["msg"]["params"]
        for c in report.connections
        for f in c["frames"]
        if f["dir"] == "a2c" and f["msg"].get("method") == "$/cancel_request"
    ]
    assert cancels == [{"requestId": request_id}]
    assert "timed out" in report.text("agent_thought_chunk")
    assert (conformance.workspace / "app.py").read_text() == APP


def test_a_linked_selection_attaches_only_its_lines(conformance: Conformance) -> None:
    """Through the official SDK: a `resource_link` to `lines.py#L2:3` (how Zed links a
    selection) read through the client's buffer reaches the model as those two lines only."""
    path = conformance.workspace / "lines.py"
    buffer = "one unsaved\ntwo unsaved\nthree unsaved\nfour unsaved\n"
    link = {"type": "resource_link", "uri": path.as_uri() + "#L2:3", "name": "lines.py"}
    prompt = [{"type": "text", "text": "explain the selection"}, link]
    report = conformance.run("prompt", ["Explained."], buffers={str(path): buffer}, prompt=prompt)
    assert report.result["response"]["stopReason"] == "end_turn"
    assert str(path) in report.result["reads"]
    sent = report.sent_to_model()
    assert "\\ntwo unsaved\\nthree unsaved\\n</external_content>" in sent, sent[-2000:]
    assert 'lines=\\"2-3\\">\\n<external_content' in sent, sent[-2000:]
    assert "one unsaved" not in sent and "four unsaved" not in sent


def test_skills_are_slash_commands_the_schema_accepts(conformance: Conformance) -> None:
    """`available_commands_update` and a `/skill` prompt, every frame checked by the schema."""
    make_skill(conformance.kiln_home / "skills", "deploy", "Ship the app.", body="DEPLOY-STEPS\n")
    steps = [{"match": "re:DEPLOY-STEPS[\\s\\S]*to staging", "text": "Deploying."}]
    report = conformance.run("prompt", steps, text="/deploy to staging")
    assert report.result["response"] == {"stopReason": "end_turn"}
    assert report.text() == "Deploying."
    [offered] = report.updates("available_commands_update")
    assert [c["name"] for c in offered["availableCommands"]] == [
        "compact",
        "context",
        "model",
        "deploy",
    ]
    frames = [f["msg"] for f in report.connections[0]["frames"] if isinstance(f.get("msg"), dict)]
    [new] = [m["id"] for m in frames if m.get("method") == "session/new"]
    answered = next(i for i, m in enumerate(frames) if m.get("id") == new and "result" in m)
    told = next(i for i, m in enumerate(frames) if "availableCommands" in json.dumps(m))
    assert answered < told  # the client knows the session the update names


def test_builtin_commands_answer_through_the_sdk(conformance: Conformance) -> None:
    """`/model`, `/context`, `/compact` reached the model as text; now they are offered in a
    session without skills and answered by Kiln, every frame checked by the schema."""
    steps = [{"match": "hello", "text": "Hi."}]
    texts = ["/model", "/model claude-haiku-4-5", "hello", "/context", "/compact"]
    report = conformance.run("prompts", steps, texts=texts)
    assert report.result["responses"] == [{"stopReason": "end_turn"}] * len(texts)
    [offered] = report.updates("available_commands_update")
    assert [c["name"] for c in offered["availableCommands"]] == ["compact", "context", "model"]
    listed, switched, hello, context, compacted = report.result["replies"]
    assert listed.startswith("Model: `claude-sonnet-4-6` (anthropic).\nOthers (known): ")
    assert "`claude-haiku-4-5`" in listed
    assert switched == (
        "Model: `claude-haiku-4-5` (anthropic) from the next message on, instead of "
        "`claude-sonnet-4-6`."
    )
    assert hello == "Hi."
    assert context.startswith("Context: 2 messages, 1 turn, 1 step; window ")
    assert compacted == "Nothing to compact yet."
    [body] = report.wire.bodies("/v1/messages")  # only `hello` reached the model, on the new one
    assert body["model"] == "claude-haiku-4-5"
    assert "/model" not in report.sent_to_model() and "/context" not in report.sent_to_model()


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
