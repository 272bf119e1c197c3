"""What the ACP front-end costs on top of the core, measured on a real `kiln acp` process.

The same scripted turns (one ``read_file`` tool call, then a text reply) run twice in one run:
in-process through ``Session`` with a disk host (the baseline), and through `kiln acp` driven by
the ACP SDK's client, with the file read over ``fs/read_text_file``. Printed: process start to
``initialize`` answer, ``session/new``, per-turn latency (mean, p50, p95) and updates per turn,
and the per-turn ratio ACP / in-process. Figures only; nothing is asserted.

    python bench/acp_roundtrip.py [--turns 30] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp import PROTOCOL_VERSION, spawn_agent_process  # noqa: E402
from acp.schema import (  # noqa: E402
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
)

from agent.providers.scripted import ScriptedModel  # noqa: E402
from agent.session import AgentConfig, DiskHost, Session  # noqa: E402
from agent.session_store import SessionStore  # noqa: E402


def script(turns: int) -> list[Any]:
    steps: list[Any] = []
    for i in range(turns):
        steps.append({"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]})
        steps.append(f"Turn {i} done.")
    return steps


class Client:
    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates += 1

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
        return ReadTextFileResponse(content=Path(path).read_text())

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no permissions expected in this benchmark")


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "mean_ms": round(statistics.mean(samples) * 1000, 2),
        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000, 2),
    }


async def in_process(root: Path, home: Path, turns: int) -> list[float]:
    store = SessionStore(home / "baseline.db")
    session = Session.create(
        root, host=DiskHost(), config=AgentConfig(), model=ScriptedModel(script(turns)), store=store
    )
    times = []
    for i in range(turns):
        start = time.perf_counter()
        await session.prompt(f"turn {i}: read notes.txt")
        times.append(time.perf_counter() - start)
    store.close()
    return times


async def over_acp(root: Path, home: Path, turns: int) -> dict[str, Any]:
    script_file = home / "script.json"
    script_file.write_text(json.dumps(script(turns)))
    env = {
        "KILN_HOME": str(home),
        "KILN_PROVIDER": "scripted",
        "KILN_SCRIPT": str(script_file),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    client = Client()
    started = time.perf_counter()
    command = [sys.executable, "-m", "lsp_server", "acp"]
    with open(os.devnull, "wb") as devnull:
        async with spawn_agent_process(
            client, *command, env=env, transport_kwargs={"stderr": devnull.fileno()}
        ) as (conn, _process):
            caps = ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
            )
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
            ready = time.perf_counter() - started
            t0 = time.perf_counter()
            sid = (await conn.new_session(cwd=str(root))).session_id
            new_session = time.perf_counter() - t0
            times = []
            for i in range(turns):
                t0 = time.perf_counter()
                await conn.prompt(
                    session_id=sid, prompt=[{"type": "text", "text": f"turn {i}: read notes.txt"}]
                )
                times.append(time.perf_counter() - t0)
    return {
        "start_to_initialize_ms": round(ready * 1000, 1),
        "session_new_ms": round(new_session * 1000, 1),
        "turns": times,
        "updates_per_turn": round(client.updates / turns, 1),
    }


async def main(turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "ws", Path(tmp) / "home"
        root.mkdir()
        home.mkdir()
        os.environ["KILN_HOME"] = str(home)
        (root / "notes.txt").write_text("".join(f"line {i}\n" for i in range(200)))
        baseline = await in_process(root, home, turns)
        acp = await over_acp(root, home, turns)
    base, remote = summary(baseline), summary(acp.pop("turns"))
    return {
        "turns": turns,
        "in_process_turn": base,
        "acp_turn": remote,
        "acp_over_in_process_mean": round(remote["mean_ms"] / base["mean_ms"], 2),
        **acp,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.turns < 1:
        parser.error("--turns must be at least 1")
    result = asyncio.run(main(args.turns))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:28} {value}")
