"""``prompt_cache_key`` on OpenAI requests: one value for a session's every request (its
sub-agent's and the next process's after ``--resume`` too), another for another session, and
none for a compatible server unless asked (an unknown field may be refused there). Real
`kiln run` processes with the real ``openai`` SDK against the wire server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.errors import ConfigError
from agent.providers.openai import sends_cache_key
from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, breaks

pytestmark = [pytest.mark.e2e]


def _keys(raws: list[bytes]) -> list[object]:
    return [json.loads(r).get("prompt_cache_key") for r in raws]


@pytest.mark.slow
def test_one_key_per_session_across_turns_and_its_sub_agent(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("A = 1\n")
    script = [
        {"tool_calls": [{"name": "task", "input": {"description": "where is A?"}}]},
        "a.py:1",  # the sub-agent's answer
        "A is in a.py.",
        "second turn",
        "other session",
    ]
    with WireServer(script) as server:
        runs = KilnRuns(tmp_path, server, api="openai")
        runs.turn(root, "find A", KILN_OPENAI_CACHE_KEY="on")
        runs.turn(root, "again", KILN_OPENAI_CACHE_KEY="on")
        first = runs.raws()
        other = KilnRuns(tmp_path, server, api="openai")
        other.turn(root, "hello", KILN_OPENAI_CACHE_KEY="on")
        raws = runs.raws()
    keys = _keys(first)
    assert len(keys) == 4 and len(set(keys)) == 1, keys
    key = keys[0]
    assert isinstance(key, str) and key.startswith("kiln-") and runs.session not in key
    parent = [first[0], first[2], first[3]]
    assert breaks(parent) == []  # the key is outside the prompt: the bytes still extend
    assert _keys(raws[4:]) != [key] and isinstance(_keys(raws[4:])[0], str)


def test_no_key_for_a_compatible_server_unless_asked(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with WireServer(["plain"]) as server:
        KilnRuns(tmp_path, server, api="openai").turn(root, "hi")
        assert b"prompt_cache_key" not in server.requests[-1].raw


def test_which_endpoints_get_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KILN_OPENAI_CACHE_KEY", raising=False)
    assert sends_cache_key(None) and sends_cache_key("https://api.openai.com/v1")
    assert not sends_cache_key("http://127.0.0.1:11434/v1")
    assert not sends_cache_key("https://api.openai.com.evil.example/v1")
    monkeypatch.setenv("KILN_OPENAI_CACHE_KEY", "off")
    assert not sends_cache_key(None)
    monkeypatch.setenv("KILN_OPENAI_CACHE_KEY", "on")
    assert sends_cache_key("http://localhost:8000/v1")
    monkeypatch.setenv("KILN_OPENAI_CACHE_KEY", "sometimes")
    with pytest.raises(ConfigError, match="auto, on or off"):
        sends_cache_key(None)
