"""`kiln run --output-format stream-json` as a pipeline reads it: one JSON object per line, every
tool call closed by exactly one `tool_call_update`, the last line the `result`."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from tests.headless.test_run_ci import call, kiln
from tests.repos import PYTEST

pytestmark = pytest.mark.e2e


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_a_tool_call_the_time_limit_cuts_short_is_closed(failing_repo: Path) -> None:
    """A `sleep` the --max-minutes limit interrupted had its `tool_call` and no update: a
    viewer showed it running after the run had ended."""
    script = [call("run_command", command="sleep 60"), "done"]
    proc = kiln(failing_repo, script, "--ci", "--no-sandbox", "--max-minutes", "0.05",
                "--output-format", "stream-json", "wait")  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    lines = events(proc.stdout)
    started = [e["id"] for e in lines if e["type"] == "tool_call"]
    updates = [e for e in lines if e["type"] == "tool_call_update"]
    assert started and [u["id"] for u in updates] == started
    assert updates[0]["status"] == "failed" and updates[0]["is_error"] is True
    # it ran until the limit killed it: "not run" told the model (and the log) nothing happened
    stopped = "stopped while it ran: turn ended (max_time); it may have done part of its work"
    assert updates[0]["output"] == stopped
    kinds = [e["type"] for e in lines]
    assert kinds.index("tool_call_update") < kinds.index("done") and kinds[-1] == "result"
    transcript = Path(lines[-1]["transcript"]).read_text()
    assert stopped in transcript and "not run" not in transcript


DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


def documented() -> dict[str, set[str]]:
    """docs/ci.md's table of stream-json objects: type -> its field names (but session_id)."""
    text = DOC.read_text().split("## Output formats", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for row in text.splitlines():
        cells = row.split(" | ")
        if row.startswith("| `") and len(cells) == 3 and cells[1] != "fields":
            kind = cells[0].strip("| `")
            names = re.sub(r"\([^)]*\)", "", cells[1])  # not the values in parentheses
            table[kind] = set(re.findall(r"`(\w+)`", names)) - {"session_id"}
    return table


def test_every_event_kind_and_field_is_documented() -> None:
    """A new event kind or field that the table does not name fails here."""
    from agent.events import event_classes
    from lsp_server.headless.ci import RunReport, Verification

    table = documented()
    common = {"session_id", "parent_tool_call_id"}  # every agent event's: said in the prose
    prose = DOC.read_text().split("## Output formats", 1)[1].split("| `type`", 1)[0]
    assert all(f"`{name}`" in prose for name in common)
    kinds = {c.kind: {f.name for f in fields(c)} - common for c in event_classes()}
    for kind, names in kinds.items():
        assert table.get(kind) == names, kind
    assert table["result"] == set(RunReport("t", 0, "", "", "").to_dict()) - {"session_id"}
    assert table["verify"] == {"phase", *Verification("", True, 0, 0.0, "").to_dict()}
    assert set(table) == {*kinds, "init", "verify", "result"}


def test_each_line_is_one_documented_object(failing_repo: Path) -> None:
    script = [
        call("todo_write", items=[{"id": "1", "content": "fix add", "status": "in_progress"}]),
        call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
        "Fixed.",
    ]
    proc = kiln(failing_repo, script, "--ci", "--verify", PYTEST, "--output-format",
                "stream-json", "fix it")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    table = documented()
    lines = events(proc.stdout)
    assert lines[0]["type"] == "init" and lines[-1]["type"] == "result"
    sid = lines[0]["session_id"]
    for line in lines:
        kind = line["type"]
        assert set(line) - {"type", "kind", "session_id", "parent_tool_call_id"} == table[kind]
        assert line["session_id"] == sid
    assert {"plan", "edit", "tool_call_running", "usage", "done"} <= {e["type"] for e in lines}
    assert lines[-1]["duration_ms"] > 0 and lines[-1]["exit_code"] == proc.returncode
    verified = [(e["phase"], e["passed"]) for e in lines if e["type"] == "verify"]
    assert verified == [("before", False), ("after", True)]
    assert lines[1]["type"] == "verify" and lines[-2]["type"] == "verify"  # as they end


def test_a_sub_agents_events_are_forwarded_marked_with_the_task_call(failing_repo: Path) -> None:
    """The `task` tool's sub-agent read files and answered with nothing in the stream: a viewer
    saw one long call. Its events now come through, each marked with the call that started it;
    the run's own events, the text answer and the report stay the parent's."""
    script = [
        call("task", description="where is add defined?"),
        call("read_file", path="calc.py"),  # the sub-agent's
        "add is in calc.py, line 1.",  # the sub-agent's answer
        "It is in calc.py.",
    ]
    proc = kiln(failing_repo, script, "--output-format", "stream-json", "find add")
    assert proc.returncode == 0, proc.stderr
    lines = events(proc.stdout)
    table = documented()
    for line in lines:
        assert (
            set(line) - {"type", "kind", "session_id", "parent_tool_call_id"} == table[line["type"]]
        )
    task_call = next(e for e in lines if e["type"] == "tool_call" and e["name"] == "task")
    child = [e for e in lines if e.get("parent_tool_call_id")]
    assert {e["parent_tool_call_id"] for e in child} == {task_call["id"]}
    read = next(e for e in child if e["type"] == "tool_call")
    assert read["name"] == "read_file" and read["session_id"] != task_call["session_id"]
    assert "".join(e["text"] for e in child if e["type"] == "text_delta") == script[2]
    assert [e["type"] for e in child][-1] == "done"
    # all of the sub-agent's events come between the task's call and its update
    kinds = [(e["type"], e.get("parent_tool_call_id", "")) for e in lines]
    update = next(i for i, e in enumerate(lines) if e["type"] == "tool_call_update"
                  and e["id"] == task_call["id"])  # fmt: skip
    assert lines.index(task_call) < lines.index(child[0]) and lines.index(child[-1]) < update
    parent = [e for e in lines if "session_id" in e and not e.get("parent_tool_call_id")]
    assert all(e["parent_tool_call_id"] == "" for e in parent if "kind" in e), kinds
    answer = "".join(e["text"] for e in parent if e["type"] == "text_delta")
    assert answer == "It is in calc.py." and lines[-1]["result"] == answer
    text = kiln(failing_repo, script, "find add")  # the text view prints the parent's answer only
    assert text.returncode == 0 and text.stdout.strip() == "It is in calc.py.", text.stderr
