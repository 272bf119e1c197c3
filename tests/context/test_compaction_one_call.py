"""Compaction, round two: one model call per compaction whatever the tier, settings that
cannot make it rewrite history on every step, never twice without new content, and
identifiers from old tool output kept verbatim."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.compaction import SUMMARY_MARKER, CompactionConfig, Compactor
from agent.compaction_store import compactions
from agent.errors import ConfigError
from tests.context.conftest import call, make_session

SUMMARY = {"match": SUMMARY_MARKER, "text": "Explored the helpers; nothing to fix there."}
DEPLOY = (
    "echo 'deploy dep-7f3a9c21 done: commit 4f9e2b1c, build 48213, "
    "https://ci.example.com/runs/991 artifacts/out/app.tar.gz took 37.5s'"
)


def summary_calls(session) -> int:
    return sum(
        1
        for r in session.model.requests
        if SUMMARY_MARKER in str(r.messages[-1]["content"][0].get("text", ""))
    )


def reads(n: int) -> list:
    names = ["alpha", "beta", "gamma", "delta"]
    return [call("read_file", path=f"src/{names[i % 4]}.py", offset=1 + i) for i in range(n)]


async def test_a_compaction_that_removes_many_rounds_makes_one_model_call(
    workspace: Path,
) -> None:
    script = [SUMMARY] * 5 + [call("run_command", command=DEPLOY), *reads(14), "done"]
    session, events = make_session(
        workspace, script, window=16000, extra={"compaction": {"keep_rounds": 2}}
    )
    assert await session.prompt("look around") == "end_turn"
    records = compactions(session.store, session.id)
    assert records and max(r["removed_messages"] for r in records) >= 6  # several rounds
    assert summary_calls(session) == len(records)  # one call per compaction
    assert all(r["source"] == "model" for r in records)
    history = session.transcript.messages[0]["content"][-1]["text"]
    for ident in ("dep-7f3a9c21", "4f9e2b1c", "48213", "https://ci.example.com/runs/991",
                  "artifacts/out/app.tar.gz", "37.5s"):  # fmt: skip
        assert ident.rstrip("s") in history, ident


def test_compact_at_below_the_target_pulls_the_target_under_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KILN_COMPACT_AT", "0.1")
    config = CompactionConfig.from_extra({})
    assert config.trigger == 0.1 and config.target == pytest.approx(0.06)
    monkeypatch.setenv("KILN_COMPACT_AT", "0")
    with pytest.raises(ConfigError, match="not a share of the window"):
        CompactionConfig.from_extra({})
    monkeypatch.delenv("KILN_COMPACT_AT")
    with pytest.raises(ConfigError, match="keep_rounds"):
        CompactionConfig.from_extra({"compaction": {"keep_rounds": 0}})


async def test_a_low_trigger_does_not_rewrite_history_every_step(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KILN_COMPACT_AT", "0.1")
    names = ["alpha", "beta", "gamma", "delta"]
    steps = [call("read_file", path=f"src/{names[i % 4]}.py", offset=1 + 20 * (i // 4), limit=20)
             for i in range(24)]  # fmt: skip
    session, _ = make_session(workspace, [SUMMARY] * 20 + steps + ["done"], window=40000)
    assert await session.prompt("read it all") == "end_turn"
    records = compactions(session.store, session.id)
    # with the old target (0.5, above the 0.1 trigger) every step from the first over 10 %
    # compacted; now each compaction frees room for several steps
    assert records and len(records) <= session.turn.step_count // 4


async def test_never_compacts_twice_without_new_content(workspace: Path) -> None:
    script = [SUMMARY] * 3 + [*reads(8), "done"]
    session, _ = make_session(workspace, script, window=10**6)
    assert await session.prompt("read") == "end_turn"
    compactor = Compactor(CompactionConfig(keep_rounds=1, target=0.001, trigger=0.01))
    first = await compactor.compact(session)
    assert first is not None
    assert await compactor.compact(session) is None  # nothing new since
    assert len(compactions(session.store, session.id)) == 1
