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
from skills_registry.mcp_config import default_kiln_home  # noqa: E402
from skills_registry.mcp_trust import approve, plan_servers  # noqa: E402

MODULE = '''"""{name}: helpers for the demo service."""


def {name}_parse(text):
    """Parse a {name} record from text; returns a dict."""
    fields = [part.strip() for part in text.split(",")]
    return {{"name": fields[0], "size": int(fields[1]) if len(fields) > 1 else 0}}
'''


def build_workspace(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    for i, name in enumerate(["orders", "billing", "users", "search", "reports", "audit"]):
        body = MODULE.format(name=name) + "".join(
            f'\n\ndef {name}_step_{j}(value):\n    """Step {j} of the {name} pipeline."""\n'
            f"    return value * {i + j} + {j}\n"
            for j in range(25)
        )
        (root / "src" / f"{name}.py").write_text(body)
    (root / "src" / "__init__.py").write_text("")
    (root / "tests" / "test_orders.py").write_text(
        "import sys\nsys.path.insert(0, 'src')\nfrom orders import orders_parse\n\n\n"
        "def test_parse():\n    assert orders_parse('a, 3') == {'name': 'a', 'size': 3}\n"
    )
    (root / "KILN.md").write_text("# Demo service\nRun tests with `python -m pytest -q tests`.\n")
    for skill, description, body in (
        (
            "release-notes",
            "Write release notes from the git log.",
            "1. Collect changes.\n2. Group by area.\n",
        ),
        ("db-migrations", "Plan and check database migrations.", "Use the plan tool first.\n"),
    ):
        folder = root / ".kiln" / "skills" / skill
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {skill}\ndescription: {description}\n---\n{body}"
        )
    tools = root / ".kiln" / "skills" / "db-migrations" / "tools"
    tools.mkdir()
    (tools / "plan.py").write_text(
        "import sys\nprint('plan: 2 migrations pending:', sys.stdin.read()[:80])\n"
    )
    for name, desc in (("plan", "Plan pending database migrations for a schema."),
                       ("check", "Check a migration file for destructive statements.")):  # fmt: skip
        spec = {"name": name, "description": desc, "command": "tools/plan.py",
                "input_schema": {"type": "object", "properties": {"schema": {"type": "string"}}}}  # fmt: skip
        (tools / f"{name}.json").write_text(json.dumps(spec))


MCP_SERVER = """import sys
try:
    from mcp.server.mcpserver import MCPServer
except ImportError:
    from mcp.server.fastmcp import FastMCP as MCPServer

server = MCPServer("notes", instructions="Team notes: search plain-text notes.")


@server.tool()
def search_notes(query: str) -> str:
    \"\"\"Search the team's notes by keyword and return matching lines.\"\"\"
    return "deploy checklist: run migrations first (ticket OPS-4711)"


server.run()
"""


def add_mcp_server(root: Path) -> None:
    (root / ".kiln" / "mcp_notes.py").write_text(MCP_SERVER)
    config = {"mcpServers": {"notes": {"command": sys.executable,
                                       "args": [str(root / ".kiln" / "mcp_notes.py")]}}}  # fmt: skip
    (root / ".kiln" / "mcp.json").write_text(json.dumps(config))
    # A repository's server starts only once the user approved it (what `kiln mcp approve` does).
    notes = plan_servers(root).project("notes")
    assert notes is not None
    approve(default_kiln_home(), root, [notes.config])


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "input": args}]}


def together(*steps: dict[str, Any]) -> dict[str, Any]:
    """Several calls in one step (parallel tool calls)."""
    return {"tool_calls": [c for step in steps for c in step["tool_calls"]]}


def use_found(api: str, name: str, **args: Any) -> dict[str, Any]:
    """Call a tool tool_search found: by name on Anthropic (loaded by tool_reference), through
    the fixed call_tool proxy on OpenAI-compatible APIs."""
    if api == "anthropic":
        return call(name, **args)
    return call("call_tool", name=name, arguments=args)


def plan(api: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(prompt, tool-call steps) per turn; each turn ends with a short text: 40 requests."""
    todo = [{"id": "1", "content": "review modules", "status": "in_progress"},
            {"id": "2", "content": "fix orders parsing", "status": "pending"}]  # fmt: skip
    test = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    parallel = {"tool_calls": [{"name": "read_file", "input": {"path": f"src/{m}.py", "limit": 8}}
                               for m in ["orders", "billing", "users", "search", "reports", "audit"]
                               for _ in range(2)]}  # fmt: skip
    return [
        ("Read orders.", [call("read_file", path="src/orders.py")]),
        ("Load the release notes skill.", [call("skill", name="release-notes")]),
        (
            "Where is orders_parse used?",
            [
                together(
                    call("grep", pattern="orders_parse"),
                    call("read_file", path="tests/test_orders.py"),
                )
            ],
        ),  # fmt: skip
        ("Find a tool for migrations.", [call("tool_search", query="plan database migrations")]),
        ("Plan migrations.", [use_found(api, "db-migrations__plan", schema="public")]),
        ("Remember how to test.", [call("remember", text="Run tests with pytest -q tests")]),
        ("Plan the work.", [call("todo_write", items=todo)]),
        ("Search for the billing pipeline.", [call("search_code", query="billing pipeline step")]),
        ("Check the team notes.", [call("tool_search", query="search team notes")]),
        ("Search notes for deploys.", [use_found(api, "notes__search_notes", query="deploy")]),
        (
            "Edit orders.",
            [
                call(
                    "edit_file",
                    path="src/orders.py",
                    old_text="return value * 0 + 0",
                    new_text="return value",
                )
            ],
        ),  # fmt: skip
        ("Run the tests.", [call("run_command", command=test)]),
        ("Load the migrations skill.", [call("skill", name="db-migrations")]),
        ("Find a checker tool.", [call("tool_search", query="check migration destructive")]),
        ("Check the migration.", [use_found(api, "db-migrations__check", schema="public")]),
        ("Remember the checker.", [call("remember", text="Check migrations with the checker")]),
        ("Skim every module.", [parallel]),
        (
            "Update the plan.",
            [call("todo_write", items=[{**todo[0], "status": "completed"}, todo[1]])],
        ),  # fmt: skip
        (
            "Read users and list files.",
            [
                together(
                    call("read_file", path="src/users.py", limit=60), call("list_files", path="src")
                )
            ],
        ),  # fmt: skip
        ("Run the tests again.", [call("run_command", command=test)]),
    ]


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
