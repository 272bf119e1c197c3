"""A sub-agent's requests begin with the parent's bytes: the same system prompt and the same
tool definitions (it still runs only read-only tools), so the provider's prompt cache serves
the prefix the parent already paid for instead of writing a second one."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, as_sent, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_subagent_requests_share_the_parent_prefix(tmp_path: Path, api: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def hello():\n    return 'hi'\n")
    script = [
        {"tool_calls": [{"name": "task", "input": {"description": "find the greeting"}}]},
        {"match": "Explore read-only",
         "tool_calls": [{"name": "edit_file", "input": {"path": "app.py", "old_text": "hi",
                                                        "new_text": "yo"}}]},
        {"match": "unknown tool", "text": "hello() in app.py:1"},
        "done",
    ]  # fmt: skip
    with WireServer(script) as server:
        runs = KilnRuns(tmp_path, server, api=api)
        runs.turn(root, "where is the greeting?")
        raws = runs.raws()
    assert (root / "app.py").read_text() == "def hello():\n    return 'hi'\n"  # still read-only
    parent, child, child_2, parent_2 = (as_sent(r) for r in raws)
    assert "Explore read-only" in str(child["messages"][:2])
    if api == "anthropic":
        assert child["system"] == parent["system"]
    assert child["tools"] == parent["tools"]
    assert breaks([raws[0], raws[3]]) == [] and breaks([raws[1], raws[2]]) == []
    assert "unknown tool 'edit_file'" in str(child_2["messages"][-1])
