"""The garbage collector's full collections in a host process, with the heap as the
interpreter leaves it and with it settled after the first turn (``lsp_server.core.heap``).

Each mode runs in its own process: the session core of `kiln lsp` / `kiln acp` (a
``SessionManager`` with the ACP front-end), a real provider SDK talking to the wire server, a
workspace whose index the turns search. Turn 1 loads everything; in the settled mode the heap is
then settled as the server does a second after it. Printed per mode: the objects the collector
tracks after turn 1 and how many of them a full collection walks, the pause of one full collection at that point (median of 5), and every
full collection the interpreter started by itself during the next turns (count, total, longest).
Prints figures, asserts nothing.

    python bench/host_heap.py [--api openai|anthropic] [--turns 40] [--corpus PATH] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class _Client:
    """An ACP client that takes the updates and offers no file system."""

    async def session_update(self, session_id: str, update: Any) -> None:
        pass


def _script(turns: int) -> list[Any]:
    steps: list[Any] = []
    for i in range(turns):
        call = {"name": "search_code", "input": {"query": f"parse options step {i}"}}
        steps += [{"tool_calls": [call]}, f"Answer {i}: " + "the options are parsed. " * 40]
    return steps


def child(api: str, turns: int, corpus: Path, settled: bool) -> dict[str, Any]:
    from agent.testing.wire_server import WireServer
    from lsp_server.acp.frontend import AcpFrontend
    from lsp_server.core import CoreConfig, SessionManager, heap

    pauses: list[float] = []
    started: list[float] = []

    def watch(phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pauses.append((time.perf_counter() - started.pop()) * 1000)

    async def run(srv: WireServer) -> dict[str, Any]:
        manager = SessionManager(AcpFrontend(_Client()), config=CoreConfig.from_options(
            {"provider": api, "mode": "yolo"}))  # fmt: skip
        session = await manager.new_session(str(corpus))
        await manager.prompt(session.id, "Where are the options parsed?")
        if settled:
            heap.settle()
        walked = len(gc.get_objects())  # what a full collection walks (frozen ones are not)
        tracked = walked + gc.get_freeze_count()
        one = []
        for _ in range(5):
            t = time.perf_counter()
            gc.collect()
            one.append((time.perf_counter() - t) * 1000)
        gc.callbacks.append(watch)
        t = time.perf_counter()
        for i in range(1, turns):
            await manager.prompt(session.id, f"And step {i}?")
        wall = time.perf_counter() - t
        gc.callbacks.remove(watch)
        await manager.shutdown()
        return {"tracked": tracked, "walked": walked, "full_ms": statistics.median(one), "wall_s": wall,
                "auto_full": len(pauses), "auto_total_ms": sum(pauses),
                "auto_max_ms": max(pauses, default=0.0)}  # fmt: skip

    with WireServer(_script(turns)) as srv:
        if api == "anthropic":
            os.environ.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.url)
        else:
            os.environ.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=srv.openai_base_url,
                              KILN_MODEL="gpt-4.1")  # fmt: skip
        return asyncio.run(run(srv))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--api", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--corpus", type=Path, default=ROOT / "indexer")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", choices=["default", "settled"], help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = child(args.api, args.turns, args.work, args.child == "settled")
        print(json.dumps(result))
        return
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(KILN_HOME=str(home), PYTHONPATH=str(ROOT))
        for mode in ("default", "settled"):
            work = Path(tmp) / f"ws-{mode}"
            shutil.copytree(args.corpus, work, ignore=shutil.ignore_patterns(".git", ".kiln"))
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--api", args.api,
                 "--turns", str(args.turns), "--work", str(work)],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"host heap, {args.api} SDK, {args.turns} turns, corpus {args.corpus}")
    print(f"{'mode':9} {'tracked':>9} {'walked':>8} {'full ms':>8} {'auto':>5} {'auto total ms':>14} "
          f"{'auto max ms':>12} {'turns s':>8}")  # fmt: skip
    for mode, r in results.items():
        print(f"{mode:9} {r['tracked']:>9} {r['walked']:>8} {r['full_ms']:>8.1f} {r['auto_full']:>5} "
              f"{r['auto_total_ms']:>14.1f} {r['auto_max_ms']:>12.1f} {r['wall_s']:>8.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
