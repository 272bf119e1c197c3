"""`:KilnStop` stops a `/compact` (PROTOCOL.md: the session is held as by a turn while it
compacts, and `kiln/session/cancel` stops it with nothing stored). The chat did not count a
compaction as busy, so Stop said "no turn is running" and the summary went on. A real
``nvim --embed`` and ``kiln lsp`` talking to the wire-format test server, which holds the
summary request at a gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.extensions.nvim_ui import Editor, nvim_env, nvim_path

pytestmark = [pytest.mark.e2e]

SUMMARY = "<compaction_request>"


def test_stop_ends_a_compaction_and_keeps_the_conversation(
    tmp_path: Path, kiln_home: Path
) -> None:
    nvim_path()
    gate = tmp_path / "gate"
    gate.touch()  # open while the questions run; closed to hold the /compact's summary
    summary = [{"match": SUMMARY, "wait_for": str(gate)}, {"match": SUMMARY, "text": "summary"}]
    replies = [{"match": w, "text": f"{w.title()} answered."} for w in ("one", "two", "three")]
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("x = 1\n")
    with WireServer([*summary * 12, *replies]) as wire:
        env = nvim_env(kiln_home, tmp_path, tmp_path / "unused.json")
        del env["KILN_PROVIDER"], env["KILN_SCRIPT"]
        # A small window makes the conversation worth compacting (tests/lsp/test_compact_busy_e2e).
        env.update(
            OPENAI_BASE_URL=wire.openai_base_url,
            OPENAI_API_KEY="test",
            KILN_CONTEXT_WINDOW="8000",
            KILN_COMPACT_AT="0.1",
        )
        ed = Editor(ws, env, ["calc.py"])
        _stop_the_compaction(ed, gate, wire)


def _stop_the_compaction(ed: Editor, gate: Path, wire: WireServer) -> None:
    try:
        ed.keys("\\kc")
        ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
        for word in ("one", "two"):
            ed.keys(f"i{word}<CR>" if word == "one" else f"{word}<CR>")
            ed.wait(f"answer {word}", lambda w=word: ed.transcript_has(f"{w.title()} answered."))
            ed.wait("the turn to end", lambda: not ed.lua("return require('kiln.chat').state.busy"))
        gate.unlink()
        asked = len(wire.bodies())
        ed.keys("/compact<CR>")
        ed.wait("the summary request", lambda: len(wire.bodies()) > asked)
        assert SUMMARY in json.dumps(wire.bodies()[-1]["messages"][-1])
        assert ed.lua("return require('kiln.chat').state.busy") is True, ed.debug()
        ed.keys("<C-c>")
        assert "no turn is running" not in ed.messages()
        ed.wait("the compaction to stop", lambda: ed.transcript_has("compaction stopped"))
        assert ed.lua("return require('kiln.chat').state.busy") is False
        assert not ed.transcript_has("compacted:"), ed.transcript()
        gate.touch()
        # Nothing lost: the session answers on, both earlier turns still in its context.
        sid = ed.lua("return require('kiln.chat').state.session_id")
        ed.keys("three<CR>")
        ed.wait("answer three", lambda: ed.transcript_has("Three answered."))
        assert ed.lua("return require('kiln.chat').state.session_id") == sid
        ed.wait("the turn to end", lambda: not ed.lua("return require('kiln.chat').state.busy"))
        ed.keys("/context<CR>")
        ed.wait("the context", lambda: ed.transcript_has("[kiln] context:"))
        line = next(x for x in ed.transcript() if "[kiln] context:" in x)
        assert ", 3 turns," in line, line
    finally:
        ed.close()
