"""Stop reasons of `kiln acp` turns as the official ACP TypeScript SDK client sees them (the
scenario runner of ``tests/acp/sdk_runner.py``): a reply the provider stopped is not an
ordinary end of turn."""

from __future__ import annotations

import pytest

from tests.acp.sdk_runner import Conformance

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_refused_reply_ends_the_turn_with_refusal(conformance: Conformance) -> None:
    """docs/acp.md lists `refusal` among the stop reasons; a reply the provider stopped as a
    refusal ended the turn `end_turn`, so the client could not tell it from an answer."""
    report = conformance.run(
        "prompt", [{"text": "I can't help with that.", "stop_reason": "refusal"}]
    )
    assert report.result["response"] == {"stopReason": "refusal"}
    assert report.text() == "I can't help with that."
    assert "the model declined to answer" in report.text("agent_thought_chunk")


def test_a_last_reply_cut_at_the_output_limit_ends_the_turn_with_max_tokens(
    conformance: Conformance,
) -> None:
    """ACP's `max_tokens`: a cut answer ended `end_turn`, so a client showed it as finished."""
    report = conformance.run("prompt", [{"text": "The fix is to", "stop_reason": "max_tokens"}])
    assert report.result["response"] == {"stopReason": "max_tokens"}
    assert report.text() == "The fix is to"
    assert "stopped at the output limit" in report.text("agent_thought_chunk")
