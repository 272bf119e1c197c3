"""`kiln context show|diff` and the report behind them, against real stored sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent import context_report as cr
from agent.compaction import SUMMARY_MARKER
from agent.session import Session
from agent.types import canonical_json
from tests.context.conftest import call, make_session


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )


async def two_turns(workspace: Path) -> Session:
    script = [
        call("read_file", path="src/app.py"),
        call("grep", pattern="def main"),
        "main is in src/app.py",
        call("todo_write", items=[{"id": "1", "content": "check main", "status": "completed"}]),
        "done",
    ]
    session, _ = make_session(workspace, script)
    assert await session.prompt("Where is main?") == "end_turn"
    assert await session.prompt("Note it in the plan.") == "end_turn"
    return session


async def test_reconstruction_matches_what_the_model_received(workspace: Path) -> None:
    session = await two_turns(workspace)
    sent = session.model.requests
    for step, request in enumerate(sent, start=1):
        view = cr.request_at(session.store, session.id, step)
        assert canonical_json(view.messages) == canonical_json(request.messages)
        assert view.system == request.system
        assert view.tools == [t.to_dict() for t in request.tools]
    report = cr.budget(cr.request_at(session.store, session.id, len(sent)), 10_000)
    sizes = {c.name: c.tokens for c in report.components}
    assert sizes["system"] > 0 and sizes["tools"] > sizes["system"]
    assert sizes["environment"] > 0 and sizes["tool results"] > 0 and sizes["status"] > 0
    assert sizes["reserve"] == session.config.max_tokens
    assert report.measured_input is not None and report.measured_input > 0
    share = cr.cache_share(session.store, session.id)
    assert share["requests"] == len(sent) and share["prefix_share"] > 0.7


async def test_show_cli_defaults_to_latest_session_of_cwd(workspace: Path) -> None:
    session = await two_turns(workspace)
    out = kiln("context", "show", "--json", cwd=workspace)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["request"]["session_id"] == session.id
    assert data["request"]["step"] == len(session.model.requests)
    names = [c["name"] for c in data["budget"]["components"]]
    assert names[:2] == ["system", "tools"] and names[-1] == "reserve"
    assert data["budget"]["note"] == "tokens estimated as characters / 4"
    assert data["settings"]["model"] == "scripted" and data["settings"]["mode"] == "yolo"
    assert 0 < data["budget"]["cache"]["prefix_share"] <= 1

    nested = kiln("context", "show", "--json", cwd=workspace / "src")
    assert json.loads(nested.stdout)["request"]["session_id"] == session.id

    text = kiln("context", "show", session.id, "--turn", "1", cwd=workspace)
    assert text.returncode == 0, text.stderr
    assert f"session {session.id}  turn 1  step 3" in text.stdout
    assert "cache-eligible prefix:" in text.stdout and "tool results" in text.stdout
    assert "Where is main?" in text.stdout and "Note it in the plan." not in text.stdout


async def test_diff_explains_append_only_and_compaction(workspace: Path) -> None:
    session = await two_turns(workspace)
    out = kiln("context", "diff", session.id, "--turn", "2", "--json", cwd=workspace)
    assert out.returncode == 0, out.stderr
    diff = json.loads(out.stdout)
    assert diff["step"] == 4 and diff["previous_step"] == 3
    assert diff["diverges_at"] == "" and diff["cause"].startswith("append-only")

    # a compaction is the one thing allowed to break the prefix, and the diff says so
    summary = {"match": SUMMARY_MARKER, "text": "looked at main"}
    session.model.enqueue(*[summary] * 6, "ok")
    from agent.compaction import CompactionConfig, Compactor

    session.model.context_window = 3000  # the next request is over the trigger
    session.context.extensions = [Compactor(CompactionConfig(keep_rounds=1))]
    assert await session.prompt("and now?") == "end_turn"
    last = session.turn.step_count
    text = kiln("context", "diff", session.id, "--step", str(last), cwd=workspace)
    assert text.returncode == 0, text.stderr
    assert "cause: compaction to epoch 1" in text.stdout
    shown = kiln("context", "show", session.id, "--json", cwd=workspace)
    records = json.loads(shown.stdout)["compactions"]
    assert [r["epoch"] for r in records] == [1] and Path(records[0]["archive"]).is_file()
    plain = kiln("context", "show", session.id, cwd=workspace).stdout
    assert "compaction -> epoch 1: tier" in plain
    assert "diverges at: message 0 (user) block" in text.stdout


async def test_bad_input_is_one_line_and_non_zero(workspace: Path) -> None:
    missing = kiln("context", "show", "nope-123", cwd=workspace)
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "Traceback" not in missing.stderr
    assert "no session 'nope-123'" in missing.stderr
    empty = kiln("context", "show", cwd=workspace)
    assert empty.returncode == 2 and "no sessions for" in empty.stderr
    session = await two_turns(workspace)
    bad_turn = kiln("context", "diff", session.id, "--turn", "9", cwd=workspace)
    assert bad_turn.returncode == 2 and "has no turn 9 (turns: 1, 2)" in bad_turn.stderr
    for command in ("show", "diff"):  # an empty id (an unset "$SID") showed the latest session
        blank = kiln("context", command, "", cwd=workspace)
        assert (blank.returncode, blank.stdout) == (2, ""), blank.stdout
        assert blank.stderr.startswith("kiln: the session id is empty"), blank.stderr


async def test_diff_names_a_changed_tool_list(workspace: Path) -> None:
    session, _ = make_session(workspace, ["one", "two"])
    await session.prompt("first")
    names = list(session.runner.tools)
    after = names[names.index("task") + 1] if names[-1] != "task" else None
    del session.runner.tools["task"]  # what a config change between turns would do
    await session.prompt("second")
    diff = cr.prefix_diff(session.store, session.id, 2)
    now = f"tool {after}" if after else "system prompt"
    assert diff.diverges_at == f"{now} (previously tool task)"
    assert diff.cause == "the tool list changed: removed ['task']"
    assert 0 < diff.share < 1
