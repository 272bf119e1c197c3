"""The scripted session of ``bench/cache_stability.py``: a small demo service with two project
skills (one with sidecar tools), an approved stdio MCP server, and the 40-request plan of tool
calls that exercises them (reads, greps, searches, an edit, commands, skill loads, tool
discoveries and calls of the found tools, memory and TODO updates, a step of parallel reads)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from skills_registry.mcp_config import default_kiln_home
from skills_registry.mcp_trust import approve, plan_servers

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
