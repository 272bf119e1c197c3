"""A long day in one session: how big the compacted history grows over many compactions.

A scripted session (the scripted model, the real store and tools) runs TURNS turns on a small
window; each turn's prompt names an issue, the reply states a decision, and one file is read.
Every few turns the session compacts. Printed every 20 turns: the epoch, the tokens of the
``<compacted_history>`` block and the estimated size of the next request (canonical-JSON
characters / 4). Goal: the history block stays a bounded share of the window, so the request
stays under the compaction trigger however long the day.

    python bench/compaction_long_day.py [--turns 200] [--window 16000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.compaction import SUMMARY_MARKER, estimate_tokens  # noqa: E402
from agent.compaction_facts import HISTORY_TAG  # noqa: E402
from agent.providers.scripted import ScriptedModel  # noqa: E402
from agent.session import AgentConfig, DiskHost, Session  # noqa: E402


def call(name: str, **args: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "input": args}]}


async def run(turns: int, window: int) -> list[dict[str, int]]:
    root = Path(tempfile.mkdtemp()) / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "alpha.py").write_text(
        "".join(f"def alpha_{i}(x):  # helper {i}\n    return x + {i}\n" for i in range(60))
    )
    summary = {"match": SUMMARY_MARKER, "text": "Checked modules; we must keep the helpers."}
    script: list[object] = [summary] * turns
    for t in range(turns):
        script += [
            call("read_file", path="src/alpha.py"),
            f"Turn {t}: we must keep the cache warm; you should not touch file_{t}.py. "
            f"We will use option {t}. I will use the helper h{t}.",
        ]
    model = ScriptedModel(script, context_window=window)
    session = Session.create(root, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model)
    rows = []
    for t in range(turns):
        goal = f"Task {t}: check module m{t} so the tests for ISSUE-{1000 + t} pass; " + "x " * 40
        await session.prompt(goal)
        if (t + 1) % 20 == 0:
            first = session.transcript.messages[0]["content"]
            history = [b["text"] for b in first if b.get("text", "").startswith(HISTORY_TAG)]
            rows.append({
                "turn": t + 1,
                "epoch": session.transcript.epoch,
                "history_tokens": estimate_tokens(history[0]) if history else 0,
                "request_tokens": session.compactor.request_tokens(session),
            })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=16_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ["KILN_HOME"] = tempfile.mkdtemp()
    rows = asyncio.run(run(args.turns, args.window))
    if args.json:
        print(json.dumps(rows))
        return
    print(f"window {args.window:,} tokens; trigger {int(0.8 * args.window):,}")
    print(f"{'turn':>5} {'epoch':>6} {'history':>8} {'request':>8}")
    for r in rows:
        print(f"{r['turn']:>5} {r['epoch']:>6} {r['history_tokens']:>8,} {r['request_tokens']:>8,}")


if __name__ == "__main__":
    main()
