"""Cache-stable prefix ratio of a 20-turn session full of mid-session events, measured on the
bytes the real SDKs sent, for this tree and a baseline tree in the same run.

Every turn is its own `kiln run --resume` process against the wire server (so every turn is also
a resume from another process). Between and inside turns: a file read, tool_search finding a
skill's sidecar tool and an MCP server's tool, calls of both, a skill installed (sorting before
the found one), the memory file edited, the git branch changed, the date rolled over (another
time zone), a sub-agent, a 429 before a reply, a fan-out of 12 parallel reads, a stream that
breaks off mid-reply, the found tool's skill removed, the MCP server failing to start, an edit,
a command, a memory note, a TODO update, and one compaction (``KILN_COMPACT_AT``).
Also printed: the first request that carries the memory file's edit (turn 7), and how many
distinct ``prompt_cache_key`` values the OpenAI arm sent (``KILN_OPENAI_CACHE_KEY=on``, as the
wire server is not api.openai.com).

For each request: the bytes sent (tools, system, messages in the order sent, ``cache_control``
markers dropped, Anthropic ``defer_loading`` tools left out as the API leaves them out of the
prompt) and the bytes reused: its longest common prefix with any earlier request of the run,
which is what a prefix cache can serve. Ratio = reused / sent over all requests.

    python bench/cache_events.py [--api anthropic|openai|both] [--baseline-rev 60a81ff] [--json]

The baseline is the same session run by another checkout of Kiln (``git archive`` of
``--baseline-rev`` into a temp dir), in the same run, against the same scripted server.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.compaction import SUMMARY_MARKER  # noqa: E402
from agent.providers.scripted import common_prefix_len  # noqa: E402
from agent.testing.wire_server import WireServer  # noqa: E402
from bench.cache_stability_session import MODULE, add_mcp_server  # noqa: E402

MEMORY_EDIT = "Use tabs."  # what KILN.md says from turn 7 on


def add_skill(root: Path, name: str, tool: str) -> None:
    tools = root / ".kiln" / "skills" / name / "tools"
    tools.mkdir(parents=True)
    (tools.parent / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {name} chores.\n---\nx\n"
    )
    (tools / "run.py").write_text("print('planned: 2 steps')\n")
    spec = {"name": tool, "description": f"{tool.title()} the {name} chores.",
            "command": "tools/run.py"}  # fmt: skip
    (tools / f"{tool}.json").write_text(json.dumps(spec))


def build(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    for i, name in enumerate(["orders", "billing", "users", "search", "reports", "audit"]):
        body = MODULE.format(name=name) + "".join(
            f'\n\ndef {name}_step_{j}(value):\n    """Step {j} of the {name} pipeline."""\n'
            f"    return value * {i + j} + {j}\n"
            for j in range(120)
        )
        (root / "src" / f"{name}.py").write_text(body)
    (root / "KILN.md").write_text("# Demo service\nRun tests with `python -m pytest -q`.\n")
    add_skill(root, "zeta", "plan")
    add_mcp_server(root)
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=root, check=True)


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": args}]}


def found(api: str, tool: str, **args: Any) -> dict[str, Any]:
    """A found tool: by name on Anthropic (declared deferred), through call_tool elsewhere."""
    if api == "anthropic":
        return call(tool, **args)
    return {"tool_calls": [{"name": "call_tool", "input": {"name": tool, "arguments": args}}]}


def plan(api: str, root: Path) -> list[tuple[str, list[Any], Any]]:
    """(prompt, steps, event before the turn) for 20 turns."""
    fan_out = {"tool_calls": [call("read_file", path=f"src/{m}.py", limit=100)["tool_calls"][0]
                              for m in ["orders", "billing", "users", "search", "reports", "audit"]
                              for _ in range(2)]}  # fmt: skip

    def git(*args: str) -> Any:
        return lambda: subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    def write(path: str, text: str) -> Any:
        return lambda: (root / path).write_text(text)

    return [
        ("Read orders.", [call("read_file", path="src/orders.py"), "Read."], None),
        ("Find a planner.", [call("tool_search", query="plan zeta chores"), "Found."], None),
        ("Plan.", [found(api, "zeta__plan"), "Planned."], None),
        ("Find the notes tool.", [call("tool_search", query="search team notes"), "Ok."], None),
        ("Search notes.", [found(api, "notes__search_notes", query="deploy"), "Noted."], None),
        ("Go on.", ["Going on."], lambda: add_skill(root, "alpha", "check")),
        ("Grep.", [call("grep", pattern="orders_parse"), "Grepped."],
         write("KILN.md", f"# Demo service\n{MEMORY_EDIT}\n")),
        ("List.", [call("list_files", path="src"), "Listed."], git("checkout", "-qb", "feature")),
        ("Search.", [call("search_code", query="billing pipeline"), "Searched."], "TZ"),
        ("Explore.", [call("task", description="where is audit used?"),  # then the child's
                      call("grep", pattern="def audit_parse"), "audit_parse: src/audit.py:4",
                      "Explored."], None),
        ("Read billing.", [{"error": 429, "retry_after": 0},
                           call("read_file", path="src/billing.py", limit=30), "Read."], None),
        ("Skim all.", [fan_out, "Skimmed."], None),
        ("Explain.", [{"text": "The pipeline st", "die": True}], None),
        ("Again.", ["The pipeline steps scale the value."], None),
        ("Go on.", ["Going on."], lambda: shutil.rmtree(root / ".kiln" / "skills" / "zeta")),
        ("Plan again.", [found(api, "zeta__plan"), "It is gone."],
         write(".kiln/mcp_notes.py", "import sys\nsys.exit(3)\n")),
        ("Edit.", [call("edit_file", path="src/orders.py", old_text="return value * 0 + 0",
                        new_text="return value"), "Edited."], None),
        ("Test.", [call("run_command", command="git status --short"), "Ran."], None),
        ("Note it.", [call("todo_write", items=[{"id": "1", "content": "ship",
                                                "status": "pending"}]), "Noted."], None),
        ("Wrap up.", ["Done."], None),
    ]  # fmt: skip


def run_arm(tree: Path, api: str, tmp: Path, compact_at: str) -> dict[str, Any]:
    root, home = tmp / "ws", tmp / "home"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "KILN_"))
    }
    env.update(KILN_HOME=str(home), PYTHONPATH=str(tree), KILN_COMPACT_AT=compact_at)
    os.environ["KILN_HOME"] = str(home)  # add_mcp_server records its approval there
    build(root)
    turns = plan(api, root)
    summaries = [{"match": SUMMARY_MARKER, "text": "Earlier: read and planned; notes say deploy."}]
    with WireServer(summaries * 6) as server:
        if api == "anthropic":
            env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)
        else:
            env.update(KILN_PROVIDER="openai", OPENAI_API_KEY="k", KILN_OPENAI_CACHE_KEY="on",
                       OPENAI_BASE_URL=server.openai_base_url, KILN_MODEL="gpt-4o")  # fmt: skip
        session, outcomes = "", []
        for prompt, steps, event in turns:
            turn_env = dict(env)
            if event == "TZ":
                env["TZ"] = turn_env["TZ"] = "Etc/GMT-14"  # tomorrow, from here on
            elif event is not None:
                event()
            server.enqueue(*steps)
            cmd = [sys.executable, "-m", "lsp_server", "run", "--root", str(root), "--mode",
                   "yolo", "--output-format", "json"]  # fmt: skip
            cmd += ["--resume", session] if session else []
            proc = subprocess.run([*cmd, prompt], env=turn_env, capture_output=True, text=True,
                                  timeout=300, cwd=tmp)  # fmt: skip
            try:
                result = json.loads(proc.stdout)
            except json.JSONDecodeError:
                raise SystemExit(f"turn {prompt!r} failed: {proc.stderr[-2000:]}") from None
            session = result["session_id"]
            outcomes.append(result["outcome"])
        raws = [r.raw for r in server.requests if r.method == "POST"]
    # the memory edit before turn 7 ("Use tabs."): the first request that tells the model
    seen = [i + 1 for i, r in enumerate(raws) if MEMORY_EDIT.encode() in r]
    keys = {json.loads(r).get("prompt_cache_key") for r in raws} - {None}
    return measure(raws) | {"outcomes": outcomes, "memory_edit_from": seen[0] if seen else None,
                            "cache_keys": len(keys)}  # fmt: skip


def linear(raw: bytes) -> str:
    """The prompt as sent, in the order a prefix cache reads it."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    body = strip(json.loads(raw))
    tools = [t for t in body.get("tools") or [] if not t.get("defer_loading")]
    parts = [tools, body.get("system") or "", body.get("messages") or []]
    return "".join(json.dumps(p, ensure_ascii=False) for p in parts)


def measure(raws: list[bytes]) -> dict[str, Any]:
    texts = [linear(r) for r in raws]
    sent = reused = 0
    rows = []
    for i, text in enumerate(texts):
        best = max((common_prefix_len(text, old) for old in texts[:i]), default=0)
        # a prompt never reuses its closing brackets: count them as sent, not reused
        best = min(best, len(text) - 2)
        sent += len(text)
        reused += max(best, 0)
        rows.append({"request": i + 1, "bytes": len(text), "reused": max(best, 0),
                     "summary": SUMMARY_MARKER in text})  # fmt: skip
    return {"requests": len(texts), "sent": sent, "reused": reused,
            "ratio": reused / sent if sent else 0.0, "rows": rows}  # fmt: skip


def baseline_tree(rev: str, tmp: Path) -> Path:
    out = tmp / f"kiln-{rev}"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"error: --baseline-rev {rev}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=["anthropic", "openai", "both"], default="both")
    parser.add_argument("--baseline-rev", default="60a81ff", help="the checkout to compare with")
    parser.add_argument("--compact-at", default="0.1", help="KILN_COMPACT_AT for both arms")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    apis = ["anthropic", "openai"] if args.api == "both" else [args.api]
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base = baseline_tree(args.baseline_rev, tmp)
        for api in apis:
            for arm, tree in ((args.baseline_rev, base), ("this tree", ROOT)):
                work = tmp / f"{api}-{arm.replace(' ', '-')}"
                work.mkdir()
                results[f"{api} / {arm}"] = run_arm(tree, api, work, args.compact_at)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for name, r in results.items():
        summaries = sum(1 for row in r["rows"] if row["summary"])
        seen = r.get("memory_edit_from")
        print(f"{name:<24} requests {r['requests']:>3} (summary calls {summaries})  sent "
              f"{r['sent']:>9,} B  reused {r['reused']:>9,} B  ratio {r['ratio']:.3f}  "
              f"memory edit sent: {f'from request {seen}' if seen else 'never'}  "
              f"prompt_cache_key values: {r.get('cache_keys', 0)}  "
              f"turns: {', '.join(sorted(set(r['outcomes'])))}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
