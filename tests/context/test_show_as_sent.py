"""`kiln context show` is the request as sent: for every step of a session run by real `kiln
run` processes (each turn a new process, `--resume`), through the real SDKs against the wire
server, and across a compaction, the request `kiln context show --step N --json` prints,
put in the provider's wire format, is byte for byte a body the server received (its tools,
system prompt, messages and output limit; cache breakpoints aside), and every body the server
received for a step is one of them.

On OpenAI the window is ``KILN_CONTEXT_WINDOW``'s, and the compaction has to come from Kiln's
own count (a server that cuts long prompts silently never says the prompt was too long): a
compaction attempt that could free nothing yet used to push the next one past the window."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.providers import anthropic as anthropic_wire
from agent.providers import openai as openai_wire
from agent.testing.wire_server import WireServer
from agent.types import Request, ToolSpec
from tests.context.test_resume_context_use import reply_measured_at
from tests.context.wire_runs import KilnRuns, as_sent

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

COMPARED = ("tools", "system", "messages", "max_tokens", "max_completion_tokens")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": arguments}]}


def shown(runs: KilnRuns, root: Path, step: int) -> dict[str, Any]:
    at = ["--step", str(step)] if step else []
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "context", "show", runs.session, *at, "--json"],
        cwd=root, env=runs.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def on_the_wire(api: str, view: dict[str, Any], model: str) -> dict[str, Any]:
    request = Request(
        system=view["system"],
        tools=[ToolSpec(t["name"], t["description"], t["input_schema"]) for t in view["tools"]],
        messages=view["messages"],
        max_tokens=view["max_tokens"],
    )
    build = anthropic_wire.build_params if api == "anthropic" else openai_wire.build_params
    body = json.loads(json.dumps(build(request, model)))
    return {k: v for k, v in as_sent(json.dumps(body).encode()).items() if k in COMPARED}


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_each_step_shown_is_a_body_the_server_received(tmp_path: Path, api: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def a():\n    return 1\n" * 500)
    (root / "b.py").write_text("def b():\n    return 2\n" * 500)
    # Two reads (each cut to the output budget of a quarter of the small window) fill it on
    # OpenAI; the fifth reply says its prompt filled the window (Anthropic's usage; on OpenAI the
    # small KILN_CONTEXT_WINDOW does it), so the next turn starts with a compaction.
    script = [call("read_file", path="a.py"), call("read_file", path="b.py"), "read it", "second", "third", "fourth",
              reply_measured_at(190_000, "fifth") if api == "anthropic" else "fifth",
              "SUMMARY: the goal was to read a.py", "sixth", "seventh"]  # fmt: skip
    with WireServer(script) as server:
        runs = KilnRuns(tmp_path, server, api=api)
        extra = {} if api == "anthropic" else {"KILN_CONTEXT_WINDOW": "5000"}
        for task in ("read a.py", "again", "third", "fourth", "fifth", "sixth", "seventh"):
            runs.turn(root, task, **extra)
        received = [as_sent(r) for r in runs.raws()]
    bodies = [{k: v for k, v in b.items() if k in COMPARED} for b in received]
    latest = shown(runs, root, 0)  # 0: the latest step
    model = latest["settings"]["model"]
    views = [shown(runs, root, n)["request"] for n in range(1, latest["request"]["step"] + 1)]
    assert any(v["epoch"] > 0 for v in views), "no compaction happened"
    matched = []
    for view in views:
        wire = on_the_wire(api, view, model)
        assert wire in bodies, f"step {view['step']} as shown was never sent"
        matched.append(bodies.index(wire))
    assert matched == sorted(matched) and len(set(matched)) == len(views)
    # what was received and is not a step is the compaction's own summary request
    others = [b for i, b in enumerate(bodies) if i not in matched]
    assert len(others) <= 1 and len(views) + len(others) == len(bodies)
