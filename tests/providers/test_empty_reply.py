"""An empty reply (Anthropic ends a turn with no content at times, after tool results most of
all) through `kiln run` and the real SDKs against the wire server, which rejects an empty
message where the real APIs do: the next turn of the session must still be accepted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e]


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_the_turn_after_an_empty_reply_is_accepted(tmp_path: Path, api: str) -> None:
    """Before, the empty assistant message went out in every later request, and both APIs
    answered 400 to each: the session could not go on."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env["KILN_HOME"] = str(tmp_path / "home")
    read = {"tool_calls": [{"name": "read_file", "input": {"path": "a.py"}}]}
    with WireServer([read, "", "x is 1.", "And y is unset."]) as srv:
        if api == "anthropic":
            env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.url)
        else:
            env.update(KILN_PROVIDER="openai", OPENAI_BASE_URL=srv.openai_base_url,
                       KILN_MODEL="gpt-4.1")  # fmt: skip
        base = [sys.executable, "-m", "lsp_server", "run", "--root", str(repo), "--mode", "yolo",
                "--output-format", "json"]  # fmt: skip
        results = []
        for args in (["Read a.py"], ["--resume", "", "What is x?"], ["--resume", "", "And y?"]):
            if results:
                args[1] = results[0]["session_id"]
            proc = subprocess.run([*base, *args], env=env, capture_output=True, text=True,
                                  timeout=120)  # fmt: skip
            assert proc.returncode == 0, proc.stderr[-2000:]
            results.append(json.loads(proc.stdout))
    assert [r["result"] for r in results] == ["", "x is 1.", "And y is unset."]
    bodies = srv.bodies()
    assert len(bodies) == 4
    # the prefix stays: each request repeats the one before it as sent
    for before, after in zip(bodies[1:], bodies[2:], strict=False):
        old = json.dumps(before["messages"][:-1], sort_keys=True)
        assert json.dumps(after["messages"][: len(before["messages"]) - 1], sort_keys=True) == old
