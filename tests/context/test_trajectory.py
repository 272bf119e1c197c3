"""Append-only trajectory details: stored output-budget previews replay on resume, and a
sub-agent's context never enters its parent's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.providers.scripted import ScriptedModel
from agent.session import DiskHost, Session
from agent.session_store import SessionStore
from agent.types import canonical_json
from tests.context.conftest import call, make_session


async def test_output_budget_preview_is_stored_and_replayed_on_resume(workspace: Path) -> None:
    session, _ = make_session(
        workspace, [call("read_file", path="src/alpha.py"), "read it"], output_budget=2000
    )
    await session.prompt("read alpha")
    result = session.transcript.messages[2]["content"][0]
    assert result["type"] == "tool_result"
    preview = result["content"]
    assert "characters omitted; the full output" in preview and len(preview) < 12_000
    saved = Path(preview.split("is saved at ")[1].split(" — ")[0])
    assert saved.is_file() and "helper number 149 of alpha" in saved.read_text()
    assert saved.is_relative_to(SessionStore().folder(session.id))

    model = ScriptedModel(["again"])
    resumed = Session.load(session.id, host=DiskHost(), model=model)
    await resumed.prompt("and now?")
    sent = model.requests[0].messages
    # the preview decided in the first run is what the resumed session sends, byte for byte
    assert canonical_json(sent[: len(session.transcript.messages)]) == canonical_json(
        session.transcript.messages
    )
    assert sent[2]["content"][0]["content"] == preview


async def test_subagent_tokens_never_enter_the_parent_context(workspace: Path) -> None:
    script = [
        call("task", description="Which helpers does src/alpha.py define?"),
        call("read_file", path="src/alpha.py"),  # the sub-agent's step
        "alpha.py defines alpha_0 .. alpha_149 (150 helpers).",  # the sub-agent's answer
        "There are 150 helpers in alpha.",
    ]
    session, _ = make_session(workspace, script, mode="ask")
    assert await session.prompt("How many helpers are in alpha?") == "end_turn"

    # the child declares the parent's tools (so it shares the cached prefix): tell them apart
    # by the child's own first message
    def is_child(request: Any) -> bool:
        return "Explore read-only" in canonical_json(request.messages[0])

    parent_requests = [r for r in session.model.requests if not is_child(r)]
    child_requests = [r for r in session.model.requests if is_child(r)]
    assert len(parent_requests) == 2 and len(child_requests) == 2
    assert any("helper number 7 of alpha" in canonical_json(r.messages) for r in child_requests)
    for request in parent_requests:
        assert "helper number 7 of alpha" not in canonical_json(request.messages)
    answer = session.transcript.messages[2]["content"][0]["content"]
    assert "alpha.py defines alpha_0 .. alpha_149 (150 helpers)." in answer
    # the parent's context grew by the short answer only
    assert (
        len(canonical_json(parent_requests[1].messages))
        - len(canonical_json(parent_requests[0].messages))
        < 2000
    )
    # the child's tokens are paid for (accounted in the parent's usage), just not in its context
    sent = [len(canonical_json(r.to_dict())) // 4 for r in session.model.requests]
    assert session.turn.usage.total_input == sum(sent)
