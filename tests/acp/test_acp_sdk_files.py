"""Files and permissions of `kiln acp` through the official ACP TypeScript SDK client.

Reads through the client's buffer, edits written by the client once allowed, refused and
withdrawn permission questions, the disk when the client offers no fs, and modes that change
what asks; every frame checked against the schema (the runner is ``tests/acp/sdk_runner.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp.sdk_runner import APP, Conformance, call

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


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
