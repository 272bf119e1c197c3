"""Prefix size: what the frozen prefix costs, and what 100 skills and 200 deferred tools add.

Measures, with tokens estimated as canonical-JSON characters / 4:
- the static prefix (system prompt + built-in tool definitions) in an empty workspace;
- the same with 100 installed skills declaring 200 sidecar tools (the prefix must not change;
  the skill catalog is one block at the tail, and schemas arrive only via tool_search);
- the cost of a tool_search that discovers 5 tools (its result text carries their schemas for
  the call_tool proxy; on Anthropic the same schemas arrive through tool_reference instead);
- the baseline design that puts all 200 schemas in the prefix (eager loading).
Goals: the prefix is byte-identical whatever is installed and at most 3,000 tokens; deferral
saves at least 85 % against eager loading.

    python bench/prefix_size.py [--skills 100] [--tools-per-skill 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.providers.scripted import ScriptedModel  # noqa: E402
from agent.session import AgentConfig, DiskHost, Session  # noqa: E402
from agent.types import canonical_json  # noqa: E402

VERBS = [
    "sync",
    "export",
    "audit",
    "index",
    "render",
    "validate",
    "publish",
    "convert",
    "lint",
    "plan",
]
NOUNS = [
    "invoices",
    "tickets",
    "schemas",
    "images",
    "reports",
    "metrics",
    "releases",
    "configs",
    "logs",
    "docs",
]


def tokens(value: Any) -> int:
    return len(value if isinstance(value, str) else canonical_json(value)) // 4


def install_skills(root: Path, count: int, tools_per_skill: int) -> None:
    for i in range(count):
        verb, noun = VERBS[i % 10], NOUNS[(i // 10) % 10]
        name = f"{verb}-{noun}-{i}"
        folder = root / ".kiln" / "skills" / name
        (folder / "tools").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {verb.capitalize()} {noun} for the team's "
            f"{noun} pipeline; use when asked to {verb} {noun}.\n---\nSteps to {verb} {noun}.\n"
        )
        (folder / "tools" / "run.py").write_text("print('ok')\n")
        for j in range(tools_per_skill):
            spec = {
                "name": f"{verb}_{j}",
                "description": f"{verb.capitalize()} one batch of {noun} (variant {j}); returns a summary "
                f"of what changed and any {noun} that were skipped.",
                "command": "tools/run.py",
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "target": {"type": "string", "description": f"which {noun} to {verb}"},
                        "dry_run": {"type": "boolean", "description": "report without changing"},
                        "limit": {"type": "integer", "minimum": 1, "description": "maximum items"},
                    },
                    "required": ["target"],
                },
            }
            (folder / "tools" / f"t{j}.json").write_text(json.dumps(spec))


def measure(root: Path) -> dict[str, Any]:
    session = Session.create(
        root, host=DiskHost(), config=AgentConfig(mode="ask"), model=ScriptedModel(["ok"])
    )
    prefix = session.context.prefix()
    context = session.skills
    catalog_block = context.catalog().render() if context is not None else None
    deferred = list(context.tool_catalog) if context is not None else []
    schemas = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in deferred
    ]
    return {
        "prefix_tokens": tokens(prefix),
        "system_tokens": tokens(prefix["system"]),
        "tools_tokens": tokens(prefix["tools"]),
        "builtin_tools": len(prefix["tools"]),
        "catalog_tokens": tokens(catalog_block or ""),
        "catalog_block": catalog_block,
        "deferred_tools": len(deferred),
        "all_schemas_tokens": tokens(schemas),
        "prefix_json": canonical_json(prefix),
        "tool_sizes": {t["name"]: tokens(t) for t in prefix["tools"]},
        "session": session,
    }


async def search_cost(session: Session) -> tuple[int, int]:
    tool = session.runner.tools.get("tool_search")
    if tool is None:
        return 0, 0
    from agent.protocols import ToolContext

    found = await tool.run(
        {"query": "export invoices batch"}, ToolContext(root=session.root, session=session.services)
    )
    referenced = [session.runner.deferred[n].spec.to_dict() for n in found.references]
    return tokens(found.text), tokens(referenced)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=100)
    parser.add_argument("--tools-per-skill", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["KILN_HOME"] = str(Path(tmp) / "home")
        empty, full = Path(tmp) / "empty", Path(tmp) / "full"
        empty.mkdir()
        full.mkdir()
        install_skills(full, args.skills, args.tools_per_skill)
        base = measure(empty)
        loaded = measure(full)
        result_tokens, schema_tokens = asyncio.run(search_cost(loaded["session"]))
    same = base["prefix_json"] == loaded["prefix_json"]
    grown = {
        name: size - base["tool_sizes"].get(name, 0)
        for name, size in loaded["tool_sizes"].items()
        if size != base["tool_sizes"].get(name)
    }
    everything = base["prefix_tokens"] + loaded["all_schemas_tokens"]
    # The result text already holds the found schemas (proxy providers); Anthropic gets the
    # referenced definitions instead, so the larger of the two is counted.
    ours = loaded["prefix_tokens"] + loaded["catalog_tokens"] + max(result_tokens, schema_tokens)
    whole_saving = 1 - ours / max(1, everything + loaded["catalog_tokens"])
    # What deferral itself costs: the fixed tool_search + call_tool definitions, the one-line
    # <deferred_tools> block, one search result; eager loading costs every schema instead.
    fixed = sum(loaded["tool_sizes"].get(n, 0) for n in ("tool_search", "call_tool"))
    summary = (loaded["catalog_block"] or "").partition("<deferred_tools>")[2]
    deferred_cost = fixed + tokens(summary) + max(result_tokens, schema_tokens)
    saving = 1 - deferred_cost / max(1, loaded["all_schemas_tokens"])
    ok = same and loaded["prefix_tokens"] <= 3000 and saving >= 0.85
    result = {
        "static_prefix_tokens": base["prefix_tokens"],
        "system_tokens": base["system_tokens"],
        "builtin_tools": base["builtin_tools"],
        "builtin_tools_tokens": base["tools_tokens"],
        "skills": args.skills,
        "deferred_tools": loaded["deferred_tools"],
        "prefix_with_skills_tokens": loaded["prefix_tokens"],
        "prefix_unchanged": same,
        "prefix_growth_by_tool": grown,
        "catalog_tail_tokens": loaded["catalog_tokens"],
        "tool_search_result_tokens": result_tokens,
        "discovered_schema_tokens": schema_tokens,
        "all_schemas_in_prefix_tokens": everything,
        "deferred_design_tokens": ours,
        "ratio_all_in_prefix_vs_deferred": round(everything / max(1, ours), 2),
        "deferral_saving": round(saving, 4),
        "deferred_tools_cost_tokens": deferred_cost,
        "whole_request_saving": round(whole_saving, 4),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0 if ok else 1
    print(
        f"static prefix: {result['static_prefix_tokens']} tokens (system {result['system_tokens']}, "
        f"{result['builtin_tools']} built-in tools {result['builtin_tools_tokens']})"
    )
    print(
        f"with {args.skills} skills / {result['deferred_tools']} deferred tools: prefix "
        f"{result['prefix_with_skills_tokens']} tokens ({'byte-identical' if same else 'CHANGED'}); "
        f"skill catalog at the tail: {result['catalog_tail_tokens']} tokens, once"
    )
    if grown:
        print(f"  prefix growth by built-in tool definition (tokens): {grown}")
    print(
        f"one tool_search finding tools: result text {result_tokens} tokens (schemas included); "
        f"referenced definitions {schema_tokens} tokens"
    )
    print(
        f"all {result['deferred_tools']} schemas in the prefix instead: {everything} tokens on every request "
        f"vs {ours} for prefix + catalog + one search ({result['ratio_all_in_prefix_vs_deferred']}x); "
        f"with the skill catalog counted in both: {100 * whole_saving:.1f}% smaller"
    )
    print(
        f"deferred tools cost {deferred_cost} tokens (tool_search + call_tool definitions {fixed}, "
        f"<deferred_tools> block, one search) vs {loaded['all_schemas_tokens']} eager: "
        f"deferral saves {100 * saving:.1f}%"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
