"""Compaction end to end: real tools on a real workspace, the scripted model, the real store."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.compaction import (
    SUMMARY_MARKER,
    CompactionConfig,
    Compactor,
)
from agent.compaction_facts import SKILL_RE
from agent.compaction_store import compactions
from agent.errors import ConfigError
from agent.events import Compacted
from agent.session import DiskHost, Session
from agent.session_store import SessionStore
from agent.types import canonical_json
from tests.context.conftest import call, make_session

GOAL = (
    "Fix ISSUE-4242 in src/app.py: main() must return 2. Commit 9f2c3ab1d7 is the last good one; "
    "the spec is at https://example.com/spec/v2?id=77 and the limit is 31337 requests."
)
DECISION = "Decision: we will keep the public signature of main unchanged."
CONSTRAINT = "Constraint: never edit src/beta.py, it is generated."
SKILL_BODY = "Step 1: run `towncrier build --version 4.2.0`."
TODOS = [
    {"id": "1", "content": "read the helper modules", "status": "completed"},
    {"id": "2", "content": "make main return 2", "status": "in_progress"},
    {"id": "3", "content": "run the checks for ISSUE-4242", "status": "pending"},
]


def long_script(summary_steps: list) -> list:
    return [
        *summary_steps,
        call("todo_write", items=TODOS),
        {"text": f"{DECISION} {CONSTRAINT}", **call("read_file", path="src/alpha.py")},
        call("read_file", path="src/beta.py"),
        {"tool_calls": [{"name": "skill", "input": {"name": "release-notes"}}]},
        call("read_file", path="src/gamma.py"),
        call("read_file", path="src/alpha.py"),
        call("edit_file", path="src/app.py", old_text="return 1", new_text="return 2"),
        call("run_command", command="echo 'test run: 3 passed'"),
        call("read_file", path="src/delta.py"),
        call("read_file", path="src/gamma.py"),
        "main() now returns 2; the checks pass.",
    ]


def context_text(session: Session) -> str:
    return canonical_json(session.transcript.messages)


def assert_valid_pairs(session: Session) -> None:
    msgs = session.transcript.messages
    assert msgs[0]["role"] == "user"
    for prev, cur in zip(msgs, msgs[1:], strict=False):
        assert prev["role"] != cur["role"]
        ids = {b["id"] for b in prev["content"] if b.get("type") == "tool_use"}
        for b in cur["content"]:
            if b.get("type") == "tool_result":
                assert b["tool_use_id"] in ids


async def run_long(workspace: Path, summary_steps: list, **cfg: object) -> tuple[Session, list]:
    skill = workspace / ".kiln" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: release-notes\ndescription: Release notes procedure.\n---\n{SKILL_BODY}\n"
    )
    session, events = make_session(workspace, long_script(summary_steps), window=9000, **cfg)
    reason = await session.prompt(GOAL)
    assert reason == "end_turn"
    return session, events


async def test_compaction_preserves_every_protected_item(workspace: Path) -> None:
    summary = {
        "match": SUMMARY_MARKER,
        "text": "Read helper modules alpha, beta, gamma; no bug there.",
    }
    session, events = await run_long(workspace, [summary] * 40)
    compaction_events = [e for e in events if e.kind == "compaction"]
    assert compaction_events, "the window was exceeded, so a compaction must have happened"
    assert session.transcript.epoch == len(compaction_events)
    records = compactions(session.store, session.id)
    assert [r["epoch"] for r in records] == list(range(1, session.transcript.epoch + 1))
    assert records[0]["source"] == "model" and records[0]["removed_messages"] > 0
    # summarisation requests are paid for: their tokens are in the session's usage
    assert all(r["summary_tokens"] > 0 for r in records)
    sent = [len(canonical_json(r.to_dict())) // 4 for r in session.model.requests]
    assert session.turn.usage.total_input == sum(sent)

    text = session.transcript.messages[0]["content"][-1]["text"]
    assert text.startswith("<compacted_history")
    for planted in (
        GOAL,
        DECISION,
        CONSTRAINT,
        "9f2c3ab1d7",
        "ISSUE-4242",
        "31337",
        "https://example.com/spec/v2?id=77",
        "src/app.py",
    ):
        assert planted in context_text(session) or planted in text, planted
    head = "\n".join(b.get("text", "") for b in session.transcript.messages[0]["content"])
    assert GOAL in head and DECISION in text and CONSTRAINT in text  # the goal stays in place
    # the <skill> block of the skill loaded is kept verbatim (one a file holds is the file's text)
    earlier = [
        m for e in range(session.transcript.epoch) for m in session.store.messages(session.id, e)
    ]
    seen = [
        found
        for m in earlier
        for b in m["content"]
        if b.get("type") == "tool_result"
        for found in SKILL_RE.findall(b["content"])
    ]
    assert seen and all(block in text for block in seen)
    assert "towncrier build --version 4.2.0" in text
    assert "make main return 2" in text and "run the checks for ISSUE-4242" in text  # open todos
    assert "read the helper modules" not in text.split("### open todos")[1]  # completed one is not
    assert "### files modified\n- src/app.py" in text
    # the summary names the file that holds the full text, and that file has it
    archive = Path(records[-1]["archive"])
    assert str(archive) in text and archive.is_file()
    for r in records:  # each compaction says what it removed and where the full text lives
        assert f"- compaction {r['epoch']}: {r['removed_messages']} messages (" in text
        assert r["archive"] in text
    assert "helper number 7 of alpha" in "".join(
        p.read_text() for p in archive.parent.glob("compaction-*.txt")
    )
    assert_valid_pairs(session)
    # the model saw the compacted context: the final request is under the trigger
    assert len(canonical_json(session.model.requests[-1].to_dict())) // 4 < 9000


async def test_verification_status_survives(workspace: Path) -> None:
    summary = {"match": SUMMARY_MARKER, "text": "summary"}
    session, _ = await run_long(workspace, [summary] * 40, extra={"compaction": {"keep_rounds": 1}})
    text = session.transcript.messages[0]["content"][-1]["text"]
    assert "### verification\n- `echo 'test run: 3 passed'` -> exit code 0" in text
    assert "test run: 3 passed" in text


async def test_circuit_breaker_falls_back_to_extraction(workspace: Path) -> None:
    failing = {"match": SUMMARY_MARKER, "raise": "server"}
    session, events = await run_long(workspace, [failing] * 20)
    asked = [r for r in session.model.requests if SUMMARY_MARKER in canonical_json(r.messages[-1])]
    assert 1 <= len(asked) <= 3  # the breaker opened after three failures in a row
    assert session.state["compaction"]["failures"] >= 3
    records = compactions(session.store, session.id)
    assert records and all("extractive" in r["source"] for r in records)
    text = session.transcript.messages[0]["content"][-1]["text"]
    assert "called read_file" in text and DECISION in text  # extractive summary, decisions
    assert any(e.kind == "compaction" for e in events)


async def test_resume_after_compaction_replays_identical_requests(workspace: Path) -> None:
    session, _ = await run_long(workspace, [{"match": SUMMARY_MARKER, "text": "s"}] * 40)
    before = canonical_json(session.build_request().to_dict())
    again = Session.load(session.id, host=DiskHost(), model=session.model)
    assert again.transcript.epoch == session.transcript.epoch > 0
    assert canonical_json(again.build_request().to_dict()) == before
    assert again.state["compaction"]["count"] == session.transcript.epoch


async def test_tier_one_drops_superseded_reads_only(workspace: Path) -> None:
    script = [
        call("read_file", path="src/alpha.py"),
        call("read_file", path="src/beta.py"),
        call("read_file", path="src/alpha.py"),
        call("list_files"),
        call("read_file", path="src/app.py"),
        call("read_file", path="src/app.py", offset=1),
        "done",
    ]
    session, events = make_session(workspace, script)
    await session.prompt("look around")
    record = await Compactor(CompactionConfig(keep_rounds=2)).compact(session)
    assert record is not None and record.tier == 1 and record.removed_messages == 0
    results = [
        b
        for m in session.transcript.messages
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert results[0]["content"].startswith(
        "[compacted: superseded read of src/alpha.py (later read_file)"
    )
    assert "helper number 3 of beta" in results[1]["content"]  # not superseded: kept
    assert "helper number 3 of alpha" in results[2]["content"]  # the latest read: kept
    assert all("[compacted" not in r["content"] for r in results[3:])  # protected rounds
    assert "helper number 3 of alpha" in Path(record.archive).read_text()
    assert SessionStore().messages(session.id) == session.transcript.messages
    assert [e.tier for e in events if isinstance(e, Compacted)] == [1]
    # superseded status blocks went too; the ones in the protected rounds stay
    with_status = [
        i
        for i, m in enumerate(session.transcript.messages)
        if any(b.get("text", "").startswith("<agent_status") for b in m["content"])
    ]
    assert all(i >= len(session.transcript.messages) - 4 for i in with_status)


async def test_nothing_to_compact_returns_none(workspace: Path) -> None:
    session, _ = make_session(workspace, ["hello"])
    await session.prompt("hi")
    assert await Compactor().compact(session) is None
    assert session.transcript.epoch == 0


async def test_trigger_is_configurable_from_the_environment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KILN_COMPACT_AT", "60%")
    assert CompactionConfig.from_extra({}).trigger == 0.6
    assert CompactionConfig.from_extra({"compaction": {"trigger": 0.9}}).trigger == 0.9
    monkeypatch.setenv("KILN_COMPACT_AT", "lots")
    with pytest.raises(ConfigError) as info:
        make_session(workspace, ["hi"])
    assert "KILN_COMPACT_AT='lots'" in str(info.value) and "0.8" in info.value.hint


async def test_epoch_switch_is_atomic_and_searchable(workspace: Path) -> None:
    script = [
        {"match": SUMMARY_MARKER, "text": "Looked at the zanzibar helpers."},
        call("read_file", path="src/alpha.py"),
        call("read_file", path="src/beta.py"),
        call("read_file", path="src/gamma.py"),
        "done",
    ]
    session, _ = make_session(workspace, script)
    await session.prompt("look")
    # leftovers of an earlier attempt that crashed half-way through writing epoch 1
    session.store.append_message(session.id, 1, 0, {"role": "user", "content": []})
    session.model.context_window = 6000
    record = await Compactor(CompactionConfig(keep_rounds=1)).compact(session)
    assert record is not None and record.epoch == 1
    assert SessionStore().messages(session.id) == session.transcript.messages
    assert SessionStore().get(session.id)["epoch"] == 1
    hits = SessionStore().search("zanzibar")
    assert any(h["session_id"] == session.id and h["kind"] == "compaction" for h in hits)
