"""A compaction's summary request continues the session's own request (same system prompt,
tools and messages, then the instruction), so the provider's prompt cache serves the history it
summarises; a standalone summary prompt paid for all of it again, and on Anthropic also wrote a
cache entry that no later request could read. Real SDKs against the wire server."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.compaction import SUMMARY_MARKER
from agent.compaction_store import compactions
from agent.providers.scripted import common_prefix_len
from agent.session import AgentConfig, DiskHost, Session
from agent.testing.wire_requests import prompt_text
from agent.testing.wire_server import WireServer
from tests.context.conftest import call
from tests.context.wire_runs import as_sent, first_change


def make_model(api: str, server: WireServer, window: int):  # type: ignore[no-untyped-def]
    if api == "anthropic":
        from agent.providers.anthropic import AnthropicModel

        return AnthropicModel(base_url=server.url, api_key="k", context_window=window)
    from agent.providers.openai import OpenAIModel

    return OpenAIModel(
        base_url=server.openai_base_url, api_key="k", model="gpt-4.1", context_window=window
    )


async def compacting_session(workspace: Path, api: str) -> tuple[Session, list[bytes]]:
    """Ten reads in a 9,000-token window: a compaction or more, through the real SDK."""
    names = ["alpha", "beta", "gamma", "delta"]
    reads = [call("read_file", path=f"src/{names[i % 4]}.py", offset=1 + 30 * (i // 4), limit=30)
             for i in range(10)]  # fmt: skip
    script = [{"match": SUMMARY_MARKER, "text": "Read the helpers of alpha..delta."}] * 4
    with WireServer([*script, *reads, "done"]) as server:
        session = Session.create(
            workspace, host=DiskHost(), config=AgentConfig(mode="yolo"),
            model=make_model(api, server, 9000),
        )  # fmt: skip
        try:
            assert await session.prompt("read the helpers") == "end_turn"
        finally:
            await session.aclose()
        raws = [r.raw for r in server.requests if r.method == "POST"]
    assert compactions(session.store, session.id)
    return session, raws


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_summary_request_reads_the_session_prefix_from_the_cache(
    workspace: Path, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KILN_HOME", str(workspace.parent / "home"))
    session, raws = await compacting_session(workspace, api)
    asks = [i for i, raw in enumerate(raws) if SUMMARY_MARKER.encode() in raw]
    assert asks and all(i > 0 for i in asks)
    for i in asks:
        before, summary = as_sent(raws[i - 1]), as_sent(raws[i])
        # everything the request before sent comes first, byte for byte
        assert first_change(before, summary) == ""
        assert SUMMARY_MARKER in str(summary["messages"][-1])
        # what a prefix cache compares (wire_requests.prompt_text): nearly all of it was sent
        old, new = prompt_text(api, before), prompt_text(api, summary)
        assert common_prefix_len(old, new) >= len(old) - 2 and len(old) > 0.8 * len(
            new
        )  # "]}" end it


async def test_summary_usage_is_stored_with_the_session(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kiln sessions show` and `kiln context show` read the usage table: a summary call's
    tokens, cost and cache reads must be there, not only in the turn's total."""
    monkeypatch.setenv("KILN_HOME", str(workspace.parent / "home"))
    session, raws = await compacting_session(workspace, "anthropic")
    asks = [raw for raw in raws if SUMMARY_MARKER.encode() in raw]
    stored = session.store.usage(session.id)
    summaries = [u for u in stored if u["step"] < 0]
    assert asks and len(summaries) == len(asks)
    assert all(u["input_tokens"] + u["cache_read_tokens"] > 0 for u in summaries)
    for key in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"):
        assert sum(u[key] for u in stored) == getattr(session.turn.usage, key)
