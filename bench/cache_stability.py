"""Cache stability of a long session, measured on the wire.

A scripted 30-turn session (file reads, greps, code searches, edits, command runs, two skill
loads, two tool searches and a deferred tool call, TODO updates) runs through the real
``anthropic`` SDK provider against the local wire-format server (``agent.testing.wire_server``).
For every request we measure which fraction of it is a byte-identical prefix of the next
request, in the order a prompt cache reads it (tools, system, messages; ``cache_control``
markers ignored), and check that every break is explained by a recorded compaction.

Two figures: "api" leaves out tools sent with ``defer_loading: true`` (the Anthropic API keeps
those out of the cached prefix), "strict" keeps them in place, as the bytes are sent. With
``--api openai`` the same session runs through the OpenAI SDK (Chat Completions); its automatic
prefix cache has no deferred tools, so there both figures are the strict one.

    python bench/cache_stability.py [--turns 30] [--window 24000] [--api anthropic|openai] [--json]
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

from agent.compaction import SUMMARY_MARKER, SUMMARY_SYSTEM  # noqa: E402
from agent.compaction_store import compactions  # noqa: E402
from agent.providers.scripted import common_prefix_len  # noqa: E402
from agent.testing.wire_server import WireServer, strip_cache_control  # noqa: E402
from agent.types import canonical_json  # noqa: E402

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


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "input": args}]}


def plan(turns: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """(prompt, tool-call steps) per turn; the model ends each turn with a short text."""
    modules = ["orders", "billing", "users", "search", "reports", "audit"]
    todo = [{"id": "1", "content": "review modules", "status": "in_progress"},
            {"id": "2", "content": "fix orders parsing", "status": "pending"}]  # fmt: skip
    special = {
        3: ("Load the release notes skill.", [call("skill", name="release-notes")]),
        5: ("Plan the work.", [call("todo_write", items=todo)]),
        8: ("Find a tool for migrations.", [call("tool_search", query="plan database migrations")]),
        9: ("Plan migrations.", [call("db-migrations__plan", schema="public")]),
        12: (
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
        13: (
            "Run the tests.",
            [
                call(
                    "run_command",
                    command=f"{sys.executable} -m pytest -q -p no:cacheprovider tests",
                )
            ],
        ),
        17: ("Load the migrations skill.", [call("skill", name="db-migrations")]),
        20: ("Find a checker tool.", [call("tool_search", query="check migration destructive")]),
        24: (
            "Update the plan.",
            [call("todo_write", items=[{**todo[0], "status": "completed"}, todo[1]])],
        ),
        27: ("Run the tests again.", [call("run_command", command="git status --short || true")]),
    }
    out = []
    for t in range(1, turns + 1):
        if t in special:
            out.append(special[t])
            continue
        m = modules[t % len(modules)]
        kind = t % 4
        if kind == 0:
            out.append((f"Read {m}.", [call("read_file", path=f"src/{m}.py")]))
        elif kind == 1:
            out.append((f"Where is {m}_parse used?", [call("grep", pattern=f"{m}_parse")]))
        elif kind == 2:
            out.append(
                (
                    f"Search for the {m} pipeline.",
                    [call("search_code", query=f"{m} pipeline step", limit=5)],
                )
            )
        else:
            out.append((f"Read {m} and list files.", [call("read_file", path=f"src/{m}.py", limit=60),
                                                      call("list_files", path="src")]))  # fmt: skip
    return out


def linearise(body: dict[str, Any], *, strict: bool) -> str:
    body = strip_cache_control(body)
    tools = [t for t in body.get("tools", []) if strict or not t.get("defer_loading")]
    parts = [canonical_json(t) for t in tools] + [canonical_json(body.get("system"))]
    parts += [canonical_json(m) for m in body.get("messages", [])]
    return "".join(parts)


def make_model(api: str, server: WireServer, window: int) -> Any:
    if api == "openai":
        from agent.providers.openai import OpenAIModel

        return OpenAIModel(
            base_url=server.openai_base_url, api_key="test", context_window=window, model="gpt-4o"
        )
    from agent.providers.anthropic import AnthropicModel

    return AnthropicModel(base_url=server.anthropic_base_url, api_key="test", context_window=window)


async def run_session(
    root: Path, turns: int, window: int, api: str = "anthropic"
) -> tuple[Any, list[dict[str, Any]]]:
    from agent.session import AgentConfig, DiskHost, Session

    steps: list[Any] = [
        {"match": SUMMARY_MARKER, "text": "Earlier turns: reviewed modules, ran tests."}
    ] * 60
    prompts = []
    for t, (prompt, calls) in enumerate(plan(turns), start=1):
        prompts.append(prompt)
        steps += [*calls, f"Done with turn {t}."]
    with WireServer(steps) as server:
        model = make_model(api, server, window)
        session = Session.create(
            root, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model
        )
        for prompt in prompts:
            reason = await session.prompt(prompt)
            if reason != "end_turn":
                raise SystemExit(f"turn ended with {reason}: {session.final_text()}")
        path = "/chat/completions" if api == "openai" else "/v1/messages"
        marker = canonical_json(SUMMARY_SYSTEM)[1:40]
        bodies = [b for b in server.bodies(path) if marker not in canonical_json(b)]
    return session, bodies


def _tool_names(body: dict[str, Any]) -> set[str]:
    return {t.get("name") or t.get("function", {}).get("name", "") for t in body.get("tools", [])}


def analyse(session: Any, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    rows = session.store.requests(session.id)
    if len(rows) != len(bodies):
        raise SystemExit(f"{len(rows)} recorded requests but {len(bodies)} on the wire")
    epochs_compacted = {r["epoch"]: r for r in compactions(session.store, session.id)}
    per_request = []
    totals = {"api": [0, 0], "strict": [0, 0]}
    unexplained = tool_breaks = 0
    for i, (row, body) in enumerate(zip(rows, bodies, strict=True)):
        item = {"step": row["step"], "turn": row["turn"], "epoch": row["epoch"]}
        for mode in ("api", "strict"):
            text = linearise(body, strict=mode == "strict")
            item[f"{mode}_tokens"] = len(text) // 4
            if i + 1 < len(bodies):
                nxt = linearise(bodies[i + 1], strict=mode == "strict")
                shared = common_prefix_len(text, nxt)
                item[f"{mode}_shared"] = shared // 4
                totals[mode][0] += shared // 4
                totals[mode][1] += len(text) // 4
        if i + 1 < len(bodies) and item["api_shared"] < item["api_tokens"]:
            nxt_epoch = rows[i + 1]["epoch"]
            record = epochs_compacted.get(nxt_epoch) if nxt_epoch != row["epoch"] else None
            added = _tool_names(bodies[i + 1]) - _tool_names(body)
            if record:
                item["break"] = f"compaction to epoch {nxt_epoch} (tier {record['tier']})"
            elif added:
                item["break"] = f"tool list grew: {', '.join(sorted(added))} (not a compaction)"
                tool_breaks += 1
            else:
                item["break"] = "UNEXPLAINED"
                unexplained += 1
        per_request.append(item)
    usage = session.store.usage(session.id)
    total_in = sum(
        u["input_tokens"] + u["cache_read_tokens"] + u["cache_write_tokens"] for u in usage
    )
    return {
        "requests": per_request,
        "api_share": totals["api"][0] / max(1, totals["api"][1]),
        "strict_share": totals["strict"][0] / max(1, totals["strict"][1]),
        "unexplained_breaks": unexplained,
        "tool_list_breaks": tool_breaks,
        "compactions": len(epochs_compacted),
        "measured_cache_read_share": sum(u["cache_read_tokens"] for u in usage) / max(1, total_in),
    }


def report(result: dict[str, Any]) -> None:
    by_turn: dict[int, list[dict[str, Any]]] = {}
    for item in result["requests"]:
        by_turn.setdefault(item["turn"], []).append(item)
    print(f"{'turn':>4} {'reqs':>4} {'tokens':>7} {'prefix-of-next':>15} {'strict':>7}  note")
    for turn, items in sorted(by_turn.items()):
        tokens = sum(i["api_tokens"] for i in items if "api_shared" in i)
        shared = sum(i["api_shared"] for i in items if "api_shared" in i)
        strict_t = sum(i["strict_tokens"] for i in items if "strict_shared" in i)
        strict_s = sum(i["strict_shared"] for i in items if "strict_shared" in i)
        notes = "; ".join(i["break"] for i in items if "break" in i)
        api = f"{100 * shared / tokens:.1f}%" if tokens else "-"
        strict = f"{100 * strict_s / strict_t:.1f}%" if strict_t else "-"
        print(f"{turn:>4} {len(items):>4} {tokens:>7} {api:>15} {strict:>7}  {notes}")
    print(
        f"total: {100 * result['api_share']:.2f}% of input tokens were a byte-identical prefix of the "
        f"next request (strict, deferred schemas in place: {100 * result['strict_share']:.2f}%); "
        f"{result['compactions']} compaction(s), {result['tool_list_breaks']} tool-list break(s), "
        f"{result['unexplained_breaks']} unexplained break(s); "
        f"measured cache-read share on the wire: {100 * result['measured_cache_read_share']:.1f}%"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument(
        "--window", type=int, default=24_000, help="context window (tokens) of the model"
    )
    parser.add_argument("--api", choices=["anthropic", "openai"], default="anthropic")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["KILN_HOME"] = str(Path(tmp) / "home")
        root = Path(tmp) / "ws"
        build_workspace(root)
        session, bodies = asyncio.run(run_session(root, args.turns, args.window, args.api))
        result = analyse(session, bodies)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    ok = (
        result["api_share"] >= 0.97
        and result["unexplained_breaks"] == 0
        and (args.api == "openai" or result["tool_list_breaks"] == 0)
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
