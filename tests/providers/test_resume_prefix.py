"""The cache prefix across a resume: two real `kiln run` processes (the second with
``--resume``, another hash seed) against the wire server. Every message the first process sent
must go out again as the same bytes — tool-call arguments included, whose key order the model
chose and the session store sorts — or the provider's prompt cache misses from there on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Arguments in the order a model writes them, not sorted: "query" before "limit".
SEARCH = {"tool_calls": [{"name": "search_code", "arguments": '{"query": "x", "limit": 3}'}]}
READ = {"tool_calls": [{"name": "read_file", "input": {"path": "a.py", "limit": 5}}]}


def _without_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    return value


def _sent(raw: bytes) -> dict[str, Any]:
    """The request as sent: ``json.loads`` keeps the key order of the bytes."""
    return _without_markers(json.loads(raw))


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_resumed_session_resends_the_same_bytes(tmp_path: Path, provider: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env["KILN_HOME"] = str(tmp_path / "home")
    with WireServer([SEARCH, "one", READ, "two"]) as srv:
        if provider == "anthropic":
            env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.url)
        else:
            env.update(KILN_PROVIDER="openai", OPENAI_BASE_URL=srv.openai_base_url,
                       KILN_MODEL="gpt-4.1")  # fmt: skip
        base = [sys.executable, "-m", "lsp_server", "run", "--root", str(repo), "--mode", "yolo",
                "--output-format", "json"]  # fmt: skip
        first = subprocess.run([*base, "look"], env={**env, "PYTHONHASHSEED": "1"},
                               capture_output=True, text=True, timeout=120)  # fmt: skip
        assert first.returncode == 0, first.stderr
        session = json.loads(first.stdout)["session_id"]
        second = subprocess.run([*base, "--resume", session, "again"],
                                env={**env, "PYTHONHASHSEED": "2"},
                                capture_output=True, text=True, timeout=120)  # fmt: skip
        assert second.returncode == 0, second.stderr
    sent = [_sent(r.raw) for r in srv.requests]
    assert len(sent) == 4
    before, after = sent[1], sent[2]  # the first process's last request, the resumed first one
    for key in ("system", "tools"):
        assert json.dumps(after.get(key)) == json.dumps(before.get(key))
    assert len(after["messages"]) > len(before["messages"])
    for old, new in zip(before["messages"], after["messages"], strict=False):
        assert json.dumps(new, ensure_ascii=False) == json.dumps(old, ensure_ascii=False)
