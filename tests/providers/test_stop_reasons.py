"""Stop reasons a real Anthropic endpoint sends besides ``end_turn``/``tool_use``, through
`kiln run` and the real SDK against the wire server: ``pause_turn`` (a long turn the API paused:
sending the reply back resumes it), ``refusal`` (the API declines every later request that still
holds the refused turn) and ``model_context_window_exceeded`` (the reply ran into the
end of the context window: cut, not finished)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import as_sent

pytestmark = [pytest.mark.e2e]


def run_anthropic(
    tmp_path: Path, srv: WireServer, *extra: str, task: str = "Why?"
) -> tuple[subprocess.CompletedProcess, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.url, KILN_HOME=str(tmp_path / "home"))
    (tmp_path / "repo").mkdir(exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", task, "--root", str(tmp_path / "repo"),
         "--output-format", "stream-json", *extra],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc, (lines[-1] if lines else {})


def test_a_paused_turn_is_resumed_by_sending_the_reply_back(tmp_path: Path) -> None:
    """Before, `pause_turn` ended the turn as finished after the first half of the answer."""
    steps: list[Any] = [{"text": "Looking at it first;", "stop_reason": "pause_turn"},
                        "the cause is the cache."]  # fmt: skip
    with WireServer(steps) as srv:
        proc, result = run_anthropic(tmp_path, srv)
    assert proc.returncode == 0, proc.stderr
    bodies = srv.bodies("/messages")
    assert len(bodies) == 2, proc.stdout[-2000:]
    last = bodies[1]["messages"][-1]  # the paused reply, sent back as the API asks
    assert last["role"] == "assistant"
    assert last["content"][0]["text"] == "Looking at it first;"
    # the resumed request is the paused one plus the reply: the cache serves all of it
    assert bodies[1]["messages"][:-1] == [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
        if isinstance(m["content"], list) else m
        for m in bodies[0]["messages"]
    ]  # fmt: skip
    assert result["stop_reason"] == "end_turn"
    assert "the cause is the cache." in result["result"]


def test_pauses_are_resumed_a_bounded_number_of_times(tmp_path: Path) -> None:
    """A server that pauses again and again is asked no more than the turn's steps allow."""
    steps = [{"text": f"step {n};", "stop_reason": "pause_turn"} for n in range(12)]
    with WireServer(steps) as srv:
        proc, result = run_anthropic(tmp_path, srv, "--max-steps", "3")
    assert len(srv.bodies("/messages")) == 3, proc.stdout[-2000:]
    assert result["stop_reason"] == "max_steps"


def test_a_reply_cut_by_the_context_window_says_so(tmp_path: Path) -> None:
    """Before, the cut answer was reported as a finished one (stop reason end_turn, no word)."""
    step = {"text": "The three causes are: first,", "stop_reason": "model_context_window_exceeded"}
    with WireServer([step]) as srv:
        proc, result = run_anthropic(tmp_path, srv)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "stopped at the end of the model's context window" in out
    assert "the answer may be incomplete" in out
    assert result["stop_reason"] == "max_tokens"


def test_a_refused_turn_leaves_the_conversation_before_the_next(tmp_path: Path) -> None:
    """Before, the refused turn stayed in every later request, and Anthropic (as the wire server
    now does) declined each of them: the session could not go on."""
    steps: list[Any] = ["Sure: the cache is warm.", {"text": "I can", "stop_reason": "refusal"},
                        "Here is the summary."]  # fmt: skip
    with WireServer(steps) as srv:
        first, result = run_anthropic(tmp_path, srv, task="Explain the cache")
        session = result["session_id"]
        refused, result = run_anthropic(tmp_path, srv, "--resume", session, task="Do the thing")
        assert result["stop_reason"] == "refusal" and result["result"] == "I can"
        assert "the model declined to answer" in refused.stdout
        after, result = run_anthropic(tmp_path, srv, "--resume", session, task="Summarise")
    assert after.returncode == 0, after.stderr
    assert result["stop_reason"] == "end_turn" and result["result"] == "Here is the summary."
    before, sent = (as_sent(r.raw) for r in srv.requests[1:3])
    # everything before the refused turn goes out again byte for byte (the cache serves it)...
    assert json.dumps(sent["messages"][:2]) == json.dumps(before["messages"][:2])
    text = json.dumps(sent["messages"][2:])
    # ...then the new prompt with a note; nothing of the refused turn
    assert "Do the thing" not in text and "I can" not in text
    assert "declined the previous turn" in text and "Summarise" in text
    assert len(sent["messages"]) == 3


@pytest.mark.parametrize(
    ("window", "summary"),
    [("16000", []), ("6000", ["Read m0.py to m3.py."])],  # the turn's prompt kept; summarised
)
def test_a_turn_refused_after_a_compaction_in_it_leaves_the_conversation(
    tmp_path: Path, window: str, summary: list[Any]
) -> None:
    """The server found the turn's request too long, Kiln compacted and asked again, and the
    reply was a refusal: before, the refused turn was kept (the compaction had rewritten the
    messages it was marked in), and Anthropic declined every later request of the session.
    With a small window the compaction summarises the turn's own prompt away too."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for n in range(4):
        (repo / f"m{n}.py").write_text(f"def f{n}(x):\n    return x  # {'pad ' * 400}\n")
    reads = [{"tool_calls": [{"name": "read_file", "input": {"path": f"m{n}.py"}}]}
             for n in range(4)]  # fmt: skip
    too_long = {"error": 400, "message": f"prompt is too long: 19000 tokens > {window} maximum"}
    steps: list[Any] = [
        "Sure: the cache is warm.",
        *reads,
        too_long,
        *summary,  # compaction's own request
        {"text": "I can", "stop_reason": "refusal"},
        "Here is the summary.",
    ]
    with WireServer(steps) as srv:
        _, result = run_anthropic(tmp_path, srv, task="Explain the cache")
        session = result["session_id"]
        refused, result = run_anthropic(tmp_path, srv, "--resume", session, "--mode", "yolo",
                                        task="Read the modules")  # fmt: skip
        assert result["stop_reason"] == "refusal", refused.stdout[-3000:]
        assert '"type": "compaction"' in refused.stdout
        after, result = run_anthropic(tmp_path, srv, "--resume", session, task="Summarise")
    assert result["stop_reason"] == "end_turn", after.stdout[-3000:]
    assert result["result"] == "Here is the summary."
    text = json.dumps(as_sent(srv.requests[-1].raw)["messages"])
    assert "I can" not in text and "declined the previous turn" in text and "Summarise" in text
    if not summary:  # the turn before the refused one stays, as it was
        assert "Sure: the cache is warm." in text and "Explain the cache" in text


def test_a_refused_first_turn_keeps_the_environment_for_the_next(tmp_path: Path) -> None:
    steps: list[Any] = [{"text": "No", "stop_reason": "refusal"}, "Fine."]
    with WireServer(steps) as srv:
        _, result = run_anthropic(tmp_path, srv, task="Bad ask")
        after, result = run_anthropic(tmp_path, srv, "--resume", result["session_id"],
                                      task="Good ask")  # fmt: skip
    assert result["result"] == "Fine.", after.stdout[-2000:]
    first, second = (as_sent(r.raw)["messages"] for r in srv.requests)
    assert len(second) == 1 and "Bad ask" not in json.dumps(second)
    environment = first[0]["content"][0]["text"]
    assert environment.startswith("<environment>")
    assert second[0]["content"][0]["text"] == environment


def test_a_refusal_says_the_providers_explanation(tmp_path: Path) -> None:
    """Anthropic sends ``stop_details`` with the refusal; before, the user saw only 'refusal'."""
    why = "This request was declined because it could enable cyber harm."
    step = {"text": "", "stop_reason": "refusal",
            "stop_details": {"type": "refusal", "category": "cyber", "explanation": why}}  # fmt: skip
    with WireServer([step]) as srv:
        proc, result = run_anthropic(tmp_path, srv)
    notes = [json.loads(line)["text"] for line in proc.stdout.splitlines()
             if line.startswith('{"type": "status"')]  # fmt: skip
    assert notes == [f"the model declined to answer (the provider stopped it: refusal: {why})"]
    assert result["stop_reason"] == "refusal"


def test_an_openai_refusal_is_shown_and_said(tmp_path: Path) -> None:
    """OpenAI streams a refusal in ``delta.refusal``, not ``content``: before, the user saw an
    empty answer that ended as a finished one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    (tmp_path / "repo").mkdir()
    with WireServer([{"refusal": "I can't help with that."}]) as srv:
        env.update(KILN_PROVIDER="openai", OPENAI_BASE_URL=srv.openai_base_url,
                   KILN_MODEL="gpt-4.1", KILN_HOME=str(tmp_path / "home"))  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "Why?", "--root", str(tmp_path / "repo"),
             "--output-format", "json"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    result = json.loads(proc.stdout)
    assert result["result"] == "I can't help with that.", proc.stdout
    assert result["stop_reason"] == "refusal"
