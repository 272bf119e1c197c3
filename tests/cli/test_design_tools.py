"""The built-in tools as the model is offered them: the tools array of a real request that
`kiln run` sends through the real anthropic/openai SDKs to the scripted wire server.

Held here: every tool of the design contract (name, required and optional arguments), the
README's list of built-ins (same order, same arguments), the provider the environment selects
(`KILN_PROVIDER`, else `ANTHROPIC_API_KEY`, else `OPENAI_API_KEY`/`OPENAI_BASE_URL`, base URLs
from the SDKs' usual variables), and state kept under `KILN_HOME`, not in the user's home."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]

# name -> (required arguments, optional arguments), as the design contract lists them
CONTRACT: dict[str, tuple[set[str], set[str]]] = {
    "read_file": ({"path"}, {"offset", "limit"}),
    "list_files": (set(), {"path"}),
    "search_code": ({"query"}, {"limit"}),
    "grep": ({"pattern"}, {"path"}),
    "edit_file": ({"path", "old_text", "new_text"}, set()),
    "write_file": ({"path", "content"}, set()),
    "run_command": ({"command"}, {"timeout"}),
    "todo_write": ({"items"}, set()),
    "skill": ({"name"}, set()),
    "tool_search": ({"query"}, set()),
    "remember": ({"text"}, set()),
    "task": ({"description"}, set()),
}
TODO_ITEM = {"id", "content", "status"}


def readme_tools() -> list[tuple[str, set[str], set[str]]]:
    """The README's "Built-in tools" bullet as (name, required, optional), in its order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    bullet = text.split("**Built-in tools**", 1)[1].split("\n- ", 1)[0]
    found = []
    for name, args in re.findall(r"`(\w+)\{([^}]*)\}`", bullet):
        words = [a.strip() for a in args.split(",") if a.strip()]
        required = {w for w in words if not w.endswith("?")}
        found.append((name, required, {w.rstrip("?") for w in words if w.endswith("?")}))
    return found


def offered_tools(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, JSON schema) of each tool a request carries, in either wire format; tools declared
    for deferred loading (Anthropic's ``defer_loading``) are not built-ins and are left out."""
    tools = []
    for tool in body.get("tools", []):
        if tool.get("defer_loading"):
            continue
        if "function" in tool:  # Chat Completions
            tools.append((tool["function"]["name"], tool["function"]["parameters"]))
        else:  # Messages API
            tools.append((tool["name"], tool["input_schema"]))
    return tools


def run_kiln(
    tmp_path: Path, env_vars: dict[str, str], repo_name: str = "repo", kiln_home_set: bool = True
) -> tuple[subprocess.CompletedProcess, list]:
    repo, home, kiln_home = tmp_path / repo_name, tmp_path / "home", tmp_path / "kiln_home"
    for folder in (repo, home, kiln_home):
        folder.mkdir()
    (repo / "app.py").write_text("x = 1\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "KILN_", "XDG_"))
    }
    with WireServer([{"text": "Nothing to do."}]) as srv:
        for key, value in env_vars.items():
            env[key] = value.format(anthropic=srv.anthropic_base_url, openai=srv.openai_base_url)
        env.update(HOME=str(home), KILN_HOME=str(kiln_home))
        if not kiln_home_set:
            del env["KILN_HOME"]
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "Say hello", "--root", str(repo)],
            env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        posts = [r for r in srv.requests if r.method == "POST"]
    return proc, posts


@pytest.mark.parametrize(
    ("env_vars", "endpoint"),
    [
        ({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "{anthropic}",
          "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "{openai}"}, "/messages"),
        ({"OPENAI_BASE_URL": "{openai}"}, "/chat/completions"),
        ({"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "{openai}"}, "/chat/completions"),
        ({"KILN_PROVIDER": "openai", "ANTHROPIC_API_KEY": "k",
          "ANTHROPIC_BASE_URL": "{anthropic}", "OPENAI_BASE_URL": "{openai}"}, "/chat/completions"),
    ],
    ids=["anthropic-key-first", "openai-base-url", "openai-key", "kiln-provider-wins"],
)  # fmt: skip
def test_the_model_is_offered_the_contract_tools(
    tmp_path: Path, env_vars: dict[str, str], endpoint: str
) -> None:
    proc, posts = run_kiln(tmp_path, env_vars)
    assert proc.returncode == 0, proc.stderr
    assert "Nothing to do." in proc.stdout
    assert len(posts) == 1 and posts[0].path.endswith(endpoint), [r.path for r in posts]
    offered = offered_tools(posts[0].body)
    schemas = dict(offered)
    order = [name for name, _ in offered]

    for name, (required, optional) in CONTRACT.items():
        assert name in schemas, f"{name} is not offered: {order}"
        schema = schemas[name]
        assert schema.get("type") == "object", name
        assert set(schema.get("required", [])) == required, name
        assert required | optional <= set(schema["properties"]), name
    item = schemas["todo_write"]["properties"]["items"]
    assert item["type"] == "array" and set(item["items"]["required"]) == TODO_ITEM
    assert [n for n in order if n in CONTRACT] == list(CONTRACT)  # the contract's fixed order

    documented = readme_tools()
    assert [name for name, _, _ in documented] == order  # the README lists every tool, in order
    for name, required, optional in documented:
        assert set(schemas[name].get("required", [])) == required, name
        assert set(schemas[name]["properties"]) == required | optional, name

    # state under KILN_HOME: the session is recorded there, the user's home stays untouched
    assert list((tmp_path / "kiln_home").rglob("transcript.jsonl"))
    assert [p.name for p in (tmp_path / "home").iterdir()] == []


def test_the_frozen_prefix_is_the_same_bytes_in_another_workspace_user_and_day(
    tmp_path: Path,
) -> None:
    """System prompt and tool definitions carry no cwd, user name or time: two `kiln run`s in
    differently named workspaces, as different users, send the same prefix; the workspace
    path reaches the model at the tail."""
    prefixes = []
    for name in ("alpha-ws", "beta-ws"):
        where = tmp_path / name
        where.mkdir()
        proc, posts = run_kiln(
            where, {"OPENAI_BASE_URL": "{openai}", "USER": f"user-{name}"}, repo_name=name
        )
        assert proc.returncode == 0, proc.stderr
        body = posts[0].body
        system = [m for m in body["messages"] if m["role"] == "system"]
        prefix = json.dumps([system, body["tools"]], sort_keys=True)
        assert name not in prefix and f"user-{name}" not in prefix
        days = {time.strftime("%Y-%m-%d"), time.strftime("%Y-%m-%d", time.gmtime())}
        assert not [day for day in days if day in prefix]
        assert name in json.dumps(body["messages"][len(system) :])
        prefixes.append(prefix)
    assert prefixes[0] == prefixes[1]


def test_state_defaults_to_dot_kiln_in_the_home_folder(tmp_path: Path) -> None:
    proc, posts = run_kiln(tmp_path, {"OPENAI_BASE_URL": "{openai}"}, kiln_home_set=False)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "home" / ".kiln" / "sessions").rglob("transcript.jsonl"))
    assert list((tmp_path / "kiln_home").iterdir()) == []


def _saved_path(body: dict[str, Any]) -> str:
    text = json.dumps(body["messages"])
    found = re.search(r"is saved at (\S+?\.txt)", text)
    assert found, "no saved-output path in the request"
    return found.group(1)


def test_long_output_is_saved_in_the_session_folder_and_readable_by_path(tmp_path: Path) -> None:
    """Output over the budget: the model gets a preview plus a path under the session folder,
    and read_file (offset/limit) and grep reach that file although it is outside the workspace."""
    printer = "import sys; sys.stdout.write(''.join(f'row {i} ' + 'x' * 80 + chr(10) for i in range(5000)))"
    flow: list[Any] = [
        {"tool_calls": [{"name": "run_command", "input": {"command": f'python3 -c "{printer}"'}}]},
        lambda body: {"tool_calls": [{"name": "read_file", "input": {
            "path": _saved_path(body), "offset": 4001, "limit": 2}}]},
        lambda body: {"tool_calls": [{"name": "grep", "input": {
            "pattern": "row 4321 ", "path": _saved_path(body)}}]},
        {"text": "Read it."},
    ]  # fmt: skip
    repo, kiln_home = tmp_path / "repo", tmp_path / "kiln_home"
    repo.mkdir(), kiln_home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    with WireServer(flow) as srv:
        env.update(OPENAI_BASE_URL=srv.openai_base_url, KILN_HOME=str(kiln_home))
        env.pop("KILN_PROVIDER", None)
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "Print rows", "--root", str(repo),
             "--mode", "yolo"],
            env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        bodies = [r.body for r in srv.requests if r.method == "POST"]
    assert proc.returncode == 0, proc.stderr
    assert len(bodies) == 4
    saved = Path(_saved_path(bodies[1]))
    assert saved.parent.parent == kiln_home / "sessions" and saved.is_file()
    preview = bodies[1]["messages"][-2]["content"] + bodies[1]["messages"][-1].get("content", "")
    assert "row 0 " in preview and "row 2500 " not in preview
    read_back = json.dumps(bodies[2]["messages"][-3:])
    lines = saved.read_text(encoding="utf-8").splitlines()  # offset counts the file's lines
    assert lines[4000] in read_back and lines[4001] in read_back
    assert " ".join(lines[4002].split()[:2]) + " " not in read_back  # "row N ": not read
    assert "row 4321 " in json.dumps(bodies[3]["messages"][-3:])
    assert list(repo.iterdir()) == []  # nothing written into the workspace


HUGE = "q" * 25_000
# (call, words its error message must hold): a wrong type, a missing required argument, an
# unknown extra argument and a huge argument for the contract tools, each answered in one line
BAD_CALLS: list[tuple[dict[str, Any], str]] = [
    ({"name": "read_file", "input": {"path": 5}}, "path: 5 is not of type 'string'"),
    ({"name": "read_file", "input": {"path": "app.py", "offset": HUGE}}, "is not of type 'integer'"),
    ({"name": "read_file", "input": {"path": "app.py", HUGE: 1}}, "was unexpected"),
    ({"name": "list_files", "input": {"recursive": True}}, "('recursive' was unexpected)"),
    ({"name": "search_code", "input": {"query": HUGE}}, "no results for 'qqq"),
    ({"name": "search_code", "input": {"query": "x", "limit": "3"}}, "is not of type 'integer'"),
    ({"name": "grep", "input": {}}, "'pattern' is a required property"),
    ({"name": "grep", "input": {"pattern": "x", "path": "nope"}}, "nope does not exist"),
    ({"name": "list_files", "input": {"path": "nope"}}, "nope does not exist"),
    ({"name": "read_file", "input": {"path": ""}}, ". is a directory"),
    ({"name": "edit_file", "input": {"path": "app.py", "old_text": "x"}}, "'new_text' is a required"),
    ({"name": "write_file", "input": {"path": "a.txt", "content": ["x"]}}, "is not of type 'string'"),
    ({"name": "run_command", "input": {"command": "echo hi", "timeout": 10**9}}, "maximum of 1800"),
    ({"name": "run_command", "input": {"command": ["echo"]}}, "is not of type 'string'"),
    ({"name": "run_command", "input": {"command": "echo hi; sleep 9 #" + HUGE, "timeout": 0.5}},
     "timed out after 0.5s (stopped): echo hi; sleep 9 #qqq"),
    ({"name": "todo_write", "input": {"items": [{"id": "1", "content": "c", "status": HUGE}]}},
     "is not one of ['pending', 'in_progress', 'completed']"),
    ({"name": "todo_write", "input": {"items": "do it"}}, "is not of type 'array'"),
    ({"name": "skill", "input": {"name": HUGE}}, "no skill named 'qqq"),
    ({"name": "tool_search", "input": {"query": 7}}, "is not of type 'string'"),
    ({"name": "remember", "input": {"text": HUGE}}, "remember: text:"),
    ({"name": "task", "input": {"description": "x", "model": "big"}}, "('model' was unexpected)"),
    ({"name": "skill", "input": {"name": "helper", "file": "../" + HUGE}}, "is outside skill"),
    ({"name": "remember", "input": {"text": " \n "}}, "text is blank"),
    ({"name": "task", "input": {"description": "   "}}, "description is blank"),
    ({"name": "search_code", "input": {"query": "  "}}, "query is blank"),
    ({"name": "todo_write", "arguments": '{"items": ' + "[" * 5000 + "]" * 5000 + "}"},
     "nest deeper than 64 levels"),
    ({"name": "todo_write", "arguments": '{"items": [{"id": "1", "content": "a\\ud800",'
                                         ' "status": "pending"}]}'}, "hold a lone surrogate"),
    ({"name": "read_file", "input": {"path": "app.py\x00.txt"}}, "hold a NUL character"),
    ({"name": "remember", "input": {"text": "use tabs\x00"}}, "hold a NUL character"),
    ({"name": "z" * 20_000, "input": {}}, "unknown tool 'zzz"),
    ({"name": "read_file", "arguments": "[1, 2]"}, "were a JSON array, not an object"),
    ({"name": "read_file", "arguments": '{"path":\n "app.py"'}, 'not valid JSON: {"path":\\n'),
]  # fmt: skip


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_bad_tool_arguments_are_one_line_errors_and_the_turn_goes_on(
    tmp_path: Path, api: str
) -> None:
    """Each bad call of a contract tool is answered with an error the model can act on: one
    ``message:`` line naming the problem, a wrong value quoted by its start and end only (not
    25,000 characters back), nothing run (a blank note is not written, a blank task starts no
    sub-agent); the turn goes on to the model's answer."""
    repo, kiln_home = tmp_path / "repo", tmp_path / "kiln_home"
    repo.mkdir(), kiln_home.mkdir()
    (repo / "app.py").write_text("x = 1\n")
    helper = repo / ".kiln" / "skills" / "helper"
    helper.mkdir(parents=True)
    (helper / "SKILL.md").write_text("---\nname: helper\ndescription: Helps.\n---\nBody.\n")
    steps: list[Any] = [{"tool_calls": [call]} for call, _ in BAD_CALLS] + [{"text": "Gave up."}]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.pop("KILN_PROVIDER", None)
    with WireServer(steps) as srv:
        if api == "openai":
            env["OPENAI_BASE_URL"] = srv.openai_base_url
        else:
            env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.anthropic_base_url)
        env["KILN_HOME"] = str(kiln_home)
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "Try the tools", "--root", str(repo),
             "--mode", "yolo", "--max-steps", str(len(steps))],
            env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        bodies = [r.body for r in srv.requests if r.method == "POST"]
    assert proc.returncode == 0, proc.stderr
    assert "Gave up." in proc.stdout
    assert len(bodies) == len(steps)
    assert max(map(len, proc.stderr.splitlines())) < 400  # a huge tool name cut on the terminal
    for (call, words), body in zip(BAD_CALLS, bodies[1:], strict=True):
        if api == "openai":
            answer = [m for m in body["messages"] if m["role"] == "tool"][-1]["content"]
        else:
            last = body["messages"][-1]["content"]
            [block] = [b for b in last if b.get("type") == "tool_result"]
            answer = (
                block["content"]
                if isinstance(block["content"], str)
                else block["content"][0]["text"]
            )
        message = [line for line in answer.splitlines() if line.startswith("message: ")]
        assert answer.startswith("error: ") and len(message) == 1, (call["name"], answer[:300])
        assert words in message[0], (call["name"], message[0][:300])
        assert len(message[0]) < 1_200, (call["name"], message[0][:300])
        assert len(answer) < 3_000, (call["name"], answer[:300])
    assert sorted(p.name for p in repo.iterdir()) == [".kiln", "app.py"]  # the index, no file
    assert (repo / "app.py").read_text() == "x = 1\n"
