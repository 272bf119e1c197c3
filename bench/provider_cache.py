"""Provider benchmark: prompt-cache hit rate and per-turn overhead, through the real SDKs
against the wire-format server (whose usage figures behave like a prefix cache).

Prints figures; never asserts. Baselines are measured in the same run:
- cache: the same session where a discovered tool is inserted among the built-ins (sorted by
  name) instead of appended after them, which is what breaks a naive prefix;
- overhead: the scripted model (no HTTP, no SDK) for the same turns.

    python bench/provider_cache.py [--turns 30] [--local]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from agent.providers.anthropic import AnthropicModel
from agent.providers.openai import OpenAIModel
from agent.providers.scripted import ScriptedModel
from agent.testing.wire_server import WireServer
from agent.types import ModelReply, Request, ToolSpec, Usage, user_message

SYSTEM = "You are Kiln, a coding agent. " * 40
TOOLS = [
    ToolSpec(
        n, f"The {n} tool. " * 10, {"type": "object", "properties": {"path": {"type": "string"}}}
    )
    for n in [
        "read_file",
        "list_files",
        "search_code",
        "grep",
        "edit_file",
        "write_file",
        "run_command",
    ]
]
DISCOVERED = ToolSpec("deploy_app", "Deploy the app. " * 10, {"type": "object", "properties": {}})


def script(turns: int) -> list[Any]:
    return [
        {"tool_calls": [{"name": "read_file", "input": {"path": f"src/m{i}.py"}}]}
        for i in range(turns - 1)
    ] + ["done"]


async def session(model: Any, turns: int, *, sorted_tools: bool) -> tuple[Usage, float]:
    messages = [user_message("Refactor the module loader.")]
    total, start = Usage(), time.perf_counter()
    deferred: list[ToolSpec] = []
    for turn in range(turns):
        if turn == turns // 3:
            deferred = [DISCOVERED]  # tool_search found a tool a third of the way in
        tools, extra = (
            (sorted([*TOOLS, *deferred], key=lambda t: t.name), [])
            if sorted_tools
            else (TOOLS, deferred)
        )
        request = Request(system=SYSTEM, tools=tools, messages=list(messages), deferred_tools=extra)
        reply = [i async for i in model.stream(request)][-1]
        assert isinstance(reply, ModelReply)
        total = total + reply.usage
        messages.append(reply.message)
        calls = [b for b in reply.message["content"] if b["type"] == "tool_use"]
        if not calls:
            break
        results = [
            {"type": "tool_result", "tool_use_id": c["id"], "content": "x = 1\n" * 30}
            for c in calls
        ]
        messages.append({"role": "user", "content": results})
    return total, time.perf_counter() - start


def hit_rate(u: Usage) -> float:
    return u.cache_read_tokens / max(1, u.total_input)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--local", action="store_true", help="also time the embedded model (slow)")
    args = parser.parse_args()
    n = args.turns

    base_usage, base_time = await session(ScriptedModel(script(n)), n, sorted_tools=False)
    print(f"scripted (no HTTP) {n} turns: {base_time * 1000 / n:.2f} ms/turn")
    for label, make in [
        ("anthropic", lambda srv: AnthropicModel(api_key="k", base_url=srv.anthropic_base_url)),
        ("openai", lambda srv: OpenAIModel(api_key="k", base_url=srv.openai_base_url)),
    ]:
        with WireServer(
            script(2)
        ) as srv:  # warm-up: SDK imports and first-call setup are not per-turn costs
            warm = make(srv)
            await session(warm, 2, sorted_tools=False)
            await warm.aclose()
        figures = {}
        for sorted_tools in (False, True):
            with WireServer(script(n)) as srv:
                model = make(srv)
                usage, elapsed = await session(model, n, sorted_tools=sorted_tools)
                await model.aclose()
            figures[sorted_tools] = (usage, elapsed)
        ours, naive = figures[False], figures[True]
        print(
            f"{label:9s} cache-read share {hit_rate(ours[0]):.3f} (appended deferred tools) vs "
            f"{hit_rate(naive[0]):.3f} (sorted tool list); uncached input tokens "
            f"{ours[0].input_tokens + ours[0].cache_write_tokens} vs {naive[0].input_tokens + naive[0].cache_write_tokens}; "
            f"{ours[1] * 1000 / n:.1f} ms/turn = {ours[1] / max(base_time, 1e-9):.0f}x scripted"
        )
    if args.local:
        from agent.providers.local import LocalModel

        model = LocalModel(max_tokens=64)
        request = Request(
            system="You are Kiln.", tools=TOOLS, messages=[user_message("Read src/app.py")]
        )
        t0 = time.perf_counter()
        reply = [i async for i in model.stream(request)][-1]
        t1 = time.perf_counter()
        reply = [i async for i in model.stream(request)][-1]
        t2 = time.perf_counter()
        print(
            f"local     first call (load + generate) {t1 - t0:.2f}s, warm call {t2 - t1:.2f}s, "
            f"{reply.usage.output_tokens / max(t2 - t1, 1e-9):.1f} output tok/s, warm cache read "
            f"{reply.usage.cache_read_tokens}/{reply.usage.total_input} tokens; reply: {reply.message['content'][0]}"
        )


if __name__ == "__main__":
    asyncio.run(main())
