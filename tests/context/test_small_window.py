"""A small window (the embedded model's 8,192 tokens, a small Ollama window): one tool output
may fill at most a quarter of it, whichever model the session has now, and a model that declares
it writes no summaries is never sent a summary request (compaction uses its extractive one).
Real tools on a real workspace, the scripted model, the real store."""

from __future__ import annotations

from pathlib import Path

from agent.compaction import SUMMARY_MARKER
from agent.compaction_store import compactions
from agent.providers.scripted import ScriptedModel
from agent.types import canonical_json
from tests.context.conftest import big_module, call, make_session

OMITTED = "characters omitted; the full output"


def last_result(messages: list[dict]) -> str:
    """The content of the latest tool result in the conversation."""
    for message in reversed(messages):
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return str(block["content"])
    raise AssertionError("no tool result")


async def test_one_output_fills_at_most_a_quarter_of_a_small_window(workspace: Path) -> None:
    (workspace / "src" / "zeta.py").write_text(big_module("zeta", 400))  # ~18,000 characters
    read = call("read_file", path="src/zeta.py")
    session, _ = make_session(workspace, [read, "read it"], window=200_000)
    await session.prompt("read zeta")
    whole = last_result(session.transcript.messages)
    assert OMITTED not in whole and "helper number 399 of zeta" in whole

    # the same session on a model with an 8,192-token window: the budget follows the model
    # (the first read alone is over the small window's trigger: the switch compacts first)
    summary = {"match": SUMMARY_MARKER, "text": "read zeta"}
    session.set_model(ScriptedModel([summary, read, "read it"], context_window=8192))
    await session.prompt("again")
    preview = last_result(session.transcript.messages)
    assert OMITTED in preview and len(preview) < 8192 // 2
    assert "helper number 0 of zeta" in preview and "helper number 399 of zeta" in preview
    saved = Path(preview.split("is saved at ")[1].split(" — ")[0])
    assert "helper number 200 of zeta" in saved.read_text()  # the middle is in the file


async def test_a_model_that_writes_no_summaries_is_never_asked_for_one(workspace: Path) -> None:
    reads = [call("read_file", path=f"src/{n}.py") for n in ("alpha", "beta", "gamma", "delta")]
    # a summary step the model would answer if it were asked: it must stay unused
    script = [{"match": SUMMARY_MARKER, "text": "MODEL-WRITTEN SUMMARY"}, *reads * 2, "done"]
    session, events = make_session(
        workspace, script, window=9000, extra={"compaction": {"keep_rounds": 1}}
    )
    session.model.writes_summaries = False  # type: ignore[attr-defined]
    assert await session.prompt("read the helpers twice") == "end_turn"

    assert any(e.kind == "compaction" for e in events), "the window filled: it must compact"
    asked = [r for r in session.model.requests if SUMMARY_MARKER in canonical_json(r.messages)]
    assert asked == []
    records = compactions(session.store, session.id)
    assert records and all(r["source"] in ("extractive", "none") for r in records)
    assert any(r["source"] == "extractive" for r in records)
    assert session.state["compaction"].get("failures", 0) == 0  # not counted as failures
    assert "MODEL-WRITTEN SUMMARY" not in canonical_json(session.transcript.messages)
