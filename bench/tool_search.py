"""Prefix cost of deferred tool schemas, and tool_search speed and quality.

Run: ``python bench/tool_search.py`` (add ``--json`` for machine-readable output).

Token estimator: ``len(canonical JSON or text) / 4`` (about four characters per token for
English and JSON); figures are for comparison, not billing. Measured:

1. the prefix with the built-in tools only (real specs from ``agent.tools``, with ``skill`` and
   ``tool_search``), its tool_search description listing no namespaces;
2. the skill catalog block (tail, not prefix) for 100 installed skills;
3. 200 deferred schemas from 5 MCP-like servers: prefix when deferred (tool_search lists 5
   namespaces) versus all 200 schemas sent eagerly, and the saving;
4. tool_search latency at 1,000 tools (p50/p95), against a naive scan-every-tool baseline
   measured in the same run;
5. top-3 accuracy on the 50 labelled intents of ``bench/tool_intents.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skills_registry.deferred import DeferredTool, ToolCatalog, qualify  # noqa: E402
from skills_registry.discovery import discover_skills  # noqa: E402
from skills_registry.tool_search import tokenize  # noqa: E402

DATA = Path(__file__).with_name("tool_intents.json")


def tokens(value: Any) -> int:
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, sort_keys=True, separators=(",", ":"))
    )
    return len(text) // 4


def schema_of(params: dict[str, str]) -> dict[str, Any]:
    props = {
        p: {"type": t, "description": f"The {p.replace('_', ' ')}."} for p, t in params.items()
    }
    return {"type": "object", "properties": props, "required": list(params)[:2]}


def load_tools(data: dict[str, Any]) -> tuple[list[DeferredTool], dict[str, str]]:
    tools = [
        DeferredTool(
            name=qualify(t["server"], t["name"]),
            namespace=t["server"],
            description=t["description"],
            input_schema=schema_of(t["params"]),
            source=f"mcp:{t['server']}",
            tool_name=t["name"],
        )
        for t in data["tools"]
    ]
    return tools, data["servers"]


def builtin_prefix(namespaces: dict[str, str]) -> tuple[list[dict[str, Any]], str]:
    """The real built-in specs (``namespaces`` no longer changes them: they ride at the tail)."""
    from agent.tools import builtin_tools
    from agent.tools.deferred_tools import CallTool
    from agent.tools.skill_tools import SkillTool, ToolSearchTool
    from skills_registry.discovery import SkillCatalog

    # tool_search's definition no longer lists namespaces (they ride at the tail), so the
    # prefix is the same for any ``namespaces``; call_tool is the fixed proxy.
    search = ToolSearchTool(ToolCatalog())
    tools = builtin_tools([SkillTool(SkillCatalog), search, CallTool()])
    return [t.spec.to_dict() for t in tools], "agent.tools specs"


def synthetic_skills(root: Path, count: int) -> None:
    topics = [
        "pdf forms",
        "release notes",
        "sql migrations",
        "brand colors",
        "incident reports",
        "api docs",
        "terraform plans",
        "react components",
        "data cleaning",
        "spreadsheets",
    ]
    for i in range(count):
        topic = topics[i % len(topics)]
        name = f"{topic.replace(' ', '-')}-{i:03d}"
        folder = root / ".kiln" / "skills" / name
        folder.mkdir(parents=True)
        desc = (
            f"Handles {topic} for team {i}: step-by-step instructions, templates and checks. "
            f"Use when the user asks about {topic} or mentions the {topic} workflow."
        )
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {json.dumps(desc)}\n---\n# {topic}\n"
        )


def thousand_tools(base: list[DeferredTool]) -> ToolCatalog:
    catalog = ToolCatalog()
    catalog.extend(base)
    for copy in range(1, 5):  # 4 more copies of the 5 servers under other names: 1,000 tools
        for tool in base:
            ns = f"{tool.namespace}{copy}"
            catalog.add(
                DeferredTool(
                    qualify(ns, tool.tool_name),
                    ns,
                    tool.description,
                    tool.input_schema,
                    f"mcp:{ns}",
                    tool.tool_name,
                )
            )
    return catalog


def naive_search(tools: list[DeferredTool], query: str, k: int) -> list[str]:
    """Baseline: tokenize every tool on every query and count overlapping words."""
    words = set(tokenize(query))
    scored = []
    for tool in tools:
        doc = tokenize(
            f"{tool.name} {tool.description} {' '.join(tool.input_schema.get('properties', {}))}"
        )
        scored.append((-len(words.intersection(doc)), tool.name))
    return [name for _, name in sorted(scored)[:k]]


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=20)
    opts = parser.parse_args()
    data = json.loads(DATA.read_text())
    tools, servers = load_tools(data)
    out: dict[str, Any] = {"estimator": "tokens = len(canonical JSON or text) / 4"}

    builtins, how = builtin_prefix({})
    search_spec = next(t for t in builtins if t["name"] == "tool_search")
    out["prefix_builtins_only"] = {
        "tools": len(builtins),
        "tool_search_spec_tokens": tokens(search_spec),
        "tokens": tokens(builtins),
        "source": how,
    }

    with tempfile.TemporaryDirectory() as tmp:
        synthetic_skills(Path(tmp), 100)
        catalog = discover_skills(Path(tmp), Path(tmp) / "home", kiln_home=Path(tmp) / "kiln")
        out["skill_catalog_100"] = {
            "skills": len(catalog),
            "tokens": tokens(catalog.render()),
            "where": "tail block, not prefix",
        }

    deferred_prefix, _ = builtin_prefix(servers)
    search_spec_5 = next(t for t in deferred_prefix if t["name"] == "tool_search")
    eager = builtins + [t.to_spec() for t in tools]
    saving = 1 - tokens(deferred_prefix) / tokens(eager)
    added_deferred = tokens(deferred_prefix) - tokens(builtins)
    added_eager = tokens(eager) - tokens(builtins)
    out["deferred_200_schemas"] = {
        "prefix_tokens_deferred": tokens(deferred_prefix),
        "tool_search_spec_tokens": tokens(search_spec_5),
        "prefix_tokens_eager": tokens(eager),
        "saving_whole_prefix": round(saving, 4),
        "tokens_added_by_mcp_deferred": added_deferred,
        "tokens_added_by_mcp_eager": added_eager,
        "saving_on_mcp_part": round(1 - added_deferred / added_eager, 4),
    }

    big = thousand_tools(tools)
    big_list = list(big)
    queries = [i["query"] for i in data["intents"]]
    big.search("warm up the index")
    fast: list[float] = []
    cpu: list[float] = []  # thread CPU time: immune to other processes on a loaded machine
    slow: list[float] = []
    for _ in range(opts.rounds):
        for q in queries:
            t0, c0 = time.perf_counter(), time.thread_time()
            big.search(q, k=5)
            cpu.append((time.thread_time() - c0) * 1000)
            fast.append((time.perf_counter() - t0) * 1000)
    for q in queries[:10]:
        t0 = time.perf_counter()
        naive_search(big_list, q, 5)
        slow.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    thousand_tools(tools).search("build")
    build_ms = (time.perf_counter() - t0) * 1000
    out["search_1000_tools"] = {
        "queries": len(fast),
        "p50_ms": round(statistics.median(fast), 3),
        "p95_ms": round(percentile(fast, 95), 3),
        "cpu_p95_ms": round(percentile(cpu, 95), 3),
        "index_build_ms": round(build_ms, 1),
        "naive_scan_p50_ms": round(statistics.median(slow), 2),
        "speedup_vs_naive": round(statistics.median(slow) / statistics.median(fast), 1),
    }

    small = ToolCatalog()
    small.extend(tools)
    hits1 = hits3 = 0
    misses = []
    for intent in data["intents"]:
        names = [t.name for t in small.search(intent["query"], k=3)]
        hits1 += bool(names) and names[0] == intent["expected"]
        hits3 += intent["expected"] in names
        if intent["expected"] not in names:
            misses.append({"query": intent["query"], "expected": intent["expected"], "got": names})
    baseline3 = sum(i["expected"] in naive_search(tools, i["query"], 3) for i in data["intents"])
    out["accuracy_50_intents"] = {
        "top1": hits1 / len(data["intents"]),
        "top3": hits3 / len(data["intents"]),
        "naive_overlap_top3": baseline3 / len(data["intents"]),
        "misses": misses,
    }

    if opts.json:
        print(json.dumps(out, indent=2))
        return
    d = out["deferred_200_schemas"]
    s = out["search_1000_tools"]
    a = out["accuracy_50_intents"]
    print(f"estimator: {out['estimator']}")
    print(
        f"prefix, built-ins only ({out['prefix_builtins_only']['tools']} tools, "
        f"{out['prefix_builtins_only']['source']}): {out['prefix_builtins_only']['tokens']} tokens"
    )
    print(
        f"tool_search spec alone: {out['prefix_builtins_only']['tool_search_spec_tokens']} tokens "
        f"with no namespaces, {d['tool_search_spec_tokens']} with the 5 MCP namespaces"
    )
    print(f"skill catalog, 100 skills (tail block): {out['skill_catalog_100']['tokens']} tokens")
    print(
        f"200 MCP schemas on 5 servers: prefix {d['prefix_tokens_deferred']} tokens deferred vs "
        f"{d['prefix_tokens_eager']} eager -> saving {d['saving_whole_prefix']:.1%} of the prefix; "
        f"MCP part {d['tokens_added_by_mcp_deferred']} vs {d['tokens_added_by_mcp_eager']} "
        f"({d['saving_on_mcp_part']:.1%} saved)"
    )
    print(
        f"tool_search at 1,000 tools: p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms wall "
        f"({s['cpu_p95_ms']} ms CPU) over {s['queries']} "
        f"queries; index build {s['index_build_ms']} ms; naive scan p50 {s['naive_scan_p50_ms']} ms "
        f"({s['speedup_vs_naive']}x slower)"
    )
    print(
        f"accuracy on 50 intents: top-1 {a['top1']:.0%}, top-3 {a['top3']:.0%} "
        f"(naive word overlap top-3 {a['naive_overlap_top3']:.0%})"
    )
    for miss in a["misses"]:
        print(f"  miss: {miss['query']!r} expected {miss['expected']} got {miss['got']}")


if __name__ == "__main__":
    main()
