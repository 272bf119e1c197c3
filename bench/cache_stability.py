"""Cache stability of a long session, measured on the wire, in both wire formats.

A scripted 40-request session (file reads, greps, code searches, an edit, command runs, two
skill loads, three tool discoveries — two from a skill's sidecar tools, one from a real stdio
MCP server — calls of the found tools, two memory updates, TODO updates, a step with 12
parallel reads) runs through the real ``anthropic`` or ``openai`` SDK provider against the local
wire-format server (``agent.testing.wire_server``), with a window small enough for one
compaction. For every request we measure which share of it is a byte-identical prefix of the
request before it (as sent: tools, system, messages; ``cache_control`` markers ignored; every
tool counted, ``defer_loading`` ones included), check that every break is explained by a
recorded compaction, and measure the status bar's share of all input and the model calls each
compaction made.

    python bench/cache_stability.py [--api anthropic|openai|both] [--window 40000] [--json]

Goals: every non-compaction request >= 0.90 shared, mean >= 0.97, status bar <= 5 % of input,
one model call per compaction.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.compaction import SUMMARY_MARKER  # noqa: E402
from agent.compaction_store import compactions  # noqa: E402
from agent.providers.scripted import common_prefix_len  # noqa: E402
from agent.testing.wire_requests import strip_cache_control  # noqa: E402
from agent.testing.wire_server import WireServer  # noqa: E402
from agent.types import canonical_json  # noqa: E402
from bench.cache_stability_session import add_mcp_server, build_workspace, plan  # noqa: E402


def linearise(body: dict[str, Any]) -> str:
    """The request in cache order, as sent: every tool (deferred ones too), system, messages."""
    body = strip_cache_control(body)
    parts = [canonical_json(t) for t in body.get("tools", [])]
    parts += [canonical_json(body.get("system"))] if "system" in body else []
    parts += [canonical_json(m) for m in body.get("messages", [])]
    return "".join(parts)


STATUS_RE = re.compile(r"<agent_status.*?</agent_status>", re.S)


def status_chars(body: dict[str, Any]) -> int:
    """Characters of status-bar blocks in the request's messages (both wire formats: text
    blocks, or user messages whose text parts were joined)."""
    total = 0
    for message in body.get("messages", []):
        content = message.get("content")
        parts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or [] if isinstance(b, dict)
        ]  # fmt: skip
        total += sum(len(m) for p in parts if isinstance(p, str) for m in STATUS_RE.findall(p))
    return total


def make_model(api: str, server: WireServer, window: int) -> Any:
    if api == "openai":
        from agent.providers.openai import OpenAIModel

        return OpenAIModel(
            base_url=server.openai_base_url, api_key="test", context_window=window, model="gpt-4o"
        )
    from agent.providers.anthropic import AnthropicModel

    return AnthropicModel(base_url=server.anthropic_base_url, api_key="test", context_window=window)


async def run_session(root: Path, window: int, api: str) -> tuple[Any, list[dict[str, Any]], int]:
    from agent.session import AgentConfig, DiskHost, Session

    steps: list[Any] = [
        {"match": SUMMARY_MARKER, "text": "Earlier turns: reviewed modules, ran tests."}
    ] * 10
    prompts = []
    for t, (prompt, calls) in enumerate(plan(api), start=1):
        prompts.append(prompt)
        steps += [*calls, f"Done with turn {t}."]
    with WireServer(steps) as server:
        model = make_model(api, server, window)
        session = Session.create(
            root, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model
        )
        try:
            for prompt in prompts:
                reason = await session.prompt(prompt)
                if reason != "end_turn":
                    raise SystemExit(f"turn ended with {reason}: {session.transcript.final_text()}")
        finally:
            await session.aclose()
        path = "/chat/completions" if api == "openai" else "/v1/messages"
        all_bodies = server.bodies(path)
    summary_calls = sum(1 for b in all_bodies if SUMMARY_MARKER in canonical_json(b))
    bodies = [b for b in all_bodies if SUMMARY_MARKER not in canonical_json(b)]
    return session, bodies, summary_calls


def analyse(session: Any, bodies: list[dict[str, Any]], summary_calls: int) -> dict[str, Any]:
    rows = session.store.requests(session.id)
    if len(rows) != len(bodies):
        raise SystemExit(f"{len(rows)} recorded requests but {len(bodies)} on the wire")
    epochs_compacted = {r["epoch"]: r for r in compactions(session.store, session.id)}
    per_request = []
    unexplained = 0
    texts = [linearise(b) for b in bodies]
    status_total = input_total = 0
    for i, (row, body, text) in enumerate(zip(rows, bodies, texts, strict=True)):
        item = {"step": row["step"], "turn": row["turn"], "epoch": row["epoch"],
                "tokens": len(text) // 4, "status_tokens": status_chars(body) // 4}  # fmt: skip
        status_total += item["status_tokens"]
        input_total += item["tokens"]
        if i:
            shared = common_prefix_len(texts[i - 1], text)
            item["share"] = round(shared / len(text), 4)  # of this request, already sent
            item["kept"] = round(shared / len(texts[i - 1]), 4)  # of the previous, reused
            if row["epoch"] != rows[i - 1]["epoch"]:
                record = epochs_compacted.get(row["epoch"])
                item["break"] = (f"compaction to epoch {row['epoch']} (tier {record['tier']})"
                                 if record else "UNEXPLAINED epoch change")  # fmt: skip
                unexplained += record is None
            elif shared < len(texts[i - 1]):
                item["break"] = "UNEXPLAINED"
                unexplained += 1
        per_request.append(item)
    shares = [r["share"] for r in per_request if "share" in r]
    steady = [r["share"] for r in per_request if "share" in r and "break" not in r]
    kept = [r["kept"] for r in per_request if "kept" in r and "break" not in r]
    low = [r for r in per_request if "share" in r and "break" not in r and r["share"] < 0.9]
    usage = session.store.usage(session.id)
    total_in = sum(
        u["input_tokens"] + u["cache_read_tokens"] + u["cache_write_tokens"] for u in usage
    )
    return {
        "requests": per_request,
        "share_min": min(steady, default=0.0),
        "kept_min": min(kept, default=0.0),
        "below_090": [
            {
                "step": r["step"],
                "share": r["share"],
                "kept": r["kept"],
                "new_tokens": r["tokens"] - int(r["share"] * r["tokens"]),
            }
            for r in low
        ],  # fmt: skip
        "share_median": statistics.median(shares) if shares else 0.0,
        "share_mean": statistics.fmean(shares) if shares else 0.0,
        "share_mean_without_compaction": statistics.fmean(steady) if steady else 0.0,
        "status_share": status_total / max(1, input_total),
        "unexplained_breaks": unexplained,
        "compactions": len(epochs_compacted),
        "compaction_model_calls": summary_calls,
        "measured_cache_read_share": sum(u["cache_read_tokens"] for u in usage) / max(1, total_in),
        "deferred_tools_called": deferred_calls(
            [
                m
                for e in range(session.transcript.epoch + 1)
                for m in session.store.messages(session.id, e)
            ]
        ),
    }


def deferred_calls(messages: list[dict[str, Any]]) -> dict[str, bool]:
    """Found tools the session called (through call_tool or by name) -> whether each worked."""
    names: dict[str, str] = {}
    out: dict[str, bool] = {}
    for message in messages:
        for block in message["content"]:
            if block.get("type") == "tool_use":
                name = block["name"]
                if name == "call_tool":
                    name = str(block["input"].get("name"))
                if "__" in name:
                    names[block["id"]] = name
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in names:
                out[names[block["tool_use_id"]]] = not block.get("is_error")
    return dict(sorted(out.items()))


def report(api: str, result: dict[str, Any]) -> None:
    print(f"[{api}] {'step':>4} {'turn':>4} {'tokens':>7} {'shared':>7} {'status':>6}  note")
    print(f"[{api}] (shared: share of the request that was a byte prefix of the one before)")
    for r in result["requests"]:
        share = f"{100 * r['share']:.1f}%" if "share" in r else "-"
        print(f"[{api}] {r['step']:>4} {r['turn']:>4} {r['tokens']:>7} {share:>7} "
              f"{r['status_tokens']:>6}  {r.get('break', '')}")  # fmt: skip
    print(
        f"[{api}] {len(result['requests'])} requests; prefix share of the request before: "
        f"min {result['share_min']:.3f} (non-compaction), median {result['share_median']:.3f}, "
        f"mean {result['share_mean']:.3f} (without the compaction step "
        f"{result['share_mean_without_compaction']:.3f}); status bar "
        f"{100 * result['status_share']:.2f}% of input; {result['compactions']} compaction(s) "
        f"with {result['compaction_model_calls']} model call(s); "
        f"{result['unexplained_breaks']} unexplained break(s); outside compaction every request "
        f"reused at least {100 * result['kept_min']:.1f}% of the one before; measured cache "
        f"reads {100 * result['measured_cache_read_share']:.1f}%"
    )
    for r in result["below_090"]:
        print(
            f"[{api}] step {r['step']} shared {100 * r['share']:.1f}%: it adds {r['new_tokens']} "
            f"new tokens; {100 * r['kept']:.1f}% of the request before was reused"
        )


def verdict(result: dict[str, Any]) -> bool:
    return (
        result["share_min"] >= 0.90
        and result["share_mean"] >= 0.97
        and result["status_share"] <= 0.05
        and result["unexplained_breaks"] == 0
        and result["compactions"] >= 1
        and result["compaction_model_calls"] == result["compactions"]
        and all(result["deferred_tools_called"].values())
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=11_000, help="context window (tokens)")
    parser.add_argument("--api", choices=["anthropic", "openai", "both"], default="both")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    apis = ["anthropic", "openai"] if args.api == "both" else [args.api]
    results: dict[str, Any] = {}
    for api in apis:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["KILN_HOME"] = str(Path(tmp) / "home")
            root = Path(tmp) / "ws"
            build_workspace(root)
            add_mcp_server(root)
            session, bodies, calls = asyncio.run(run_session(root, args.window, api))
            results[api] = analyse(session, bodies, calls)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for api, result in results.items():
            report(api, result)
    return 0 if all(verdict(r) for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
