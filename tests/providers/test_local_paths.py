"""The embedded model names only paths that exist, and a call it already had answered is
answered instead (``agent/providers/local_paths.py``).

Before, SmolLM2 asked for ``/tmp/x/workspace_root/os/python/2.7/10.0/10.0/…`` until the output
limit, then ``list_files`` of a file five times (``repeated_failure``); or the same listing again
and again until the step limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.providers import local_available
from agent.providers.local_paths import MAX_FILES, choices, repeats
from agent.types import Request

ROOT = Path(__file__).resolve().parents[2]
needs_local = pytest.mark.skipif(
    not local_available(),
    reason="the local extra is not installed: pip install 'kiln-agent[local]'",
)


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "pkg" / "deep" / "deeper").mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / "node_modules" / "x").mkdir(parents=True)
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (ws / "pkg" / "mod.py").write_text("X = 1\n")
    (ws / "pkg" / "deep" / "deeper" / "far.py").write_text("Y = 2\n")
    (ws / ".git" / "config").write_text("")
    (ws / "node_modules" / "x" / "index.js").write_text("")
    (ws / 'say "hi".py').write_text("")
    return ws


def user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def call(name: str, args: dict, id_: str = "c1") -> dict:
    block = {"type": "tool_use", "id": id_, "name": name, "input": args}
    return {"role": "assistant", "content": [block]}


def result(text: str, id_: str = "c1") -> dict:
    block = {"type": "tool_result", "tool_use_id": id_, "content": text}
    return {"role": "user", "content": [block, {"type": "text", "text": "<agent_status>…"}]}


def test_paths_named_in_the_conversation_come_first_and_hidden_ones_never(tmp_path) -> None:
    ws = workspace(tmp_path)
    named = [user(f"Why is {ws}/pkg/deep/deeper/far.py slow? Also see ./pkg/deep, ../x.py.")]
    files, dirs = choices(str(ws), named)
    assert files[0] == "pkg/deep/deeper/far.py"  # named by its absolute path
    assert dirs[:2] == [".", "pkg/deep"]
    assert {"calc.py", "pkg/mod.py"} <= set(files)
    # hidden and build folders, and a name the grammar cannot quote, are never offered
    offered = files + dirs
    assert not [p for p in offered if ".git" in p or "node_modules" in p or '"' in p]
    assert "../x.py" not in offered and "x.py" not in offered
    assert choices("", named) == ([], [])


def test_a_large_tree_is_offered_within_the_bound(tmp_path) -> None:
    ws = tmp_path / "big"
    for i in range(30):
        (ws / f"d{i:02}").mkdir(parents=True)
        for j in range(30):
            (ws / f"d{i:02}" / f"f{j:02}.py").write_text("")
    target = "d29/f29.py"  # the last the walk would reach
    files, _ = choices(str(ws), [user(f"fix {target}")])
    assert len(files) == MAX_FILES and files[0] == target


@needs_local
def test_the_grammar_offers_the_paths_and_llama_cpp_reads_it(tmp_path) -> None:
    from llama_cpp import LlamaGrammar

    from agent.providers.local_format import ANSWER_GRAMMAR, build_grammar
    from agent.tools import builtin_tools

    ws = workspace(tmp_path)
    files, dirs = choices(str(ws), [user("What does calc.py do?")])
    tools = [t.spec for t in builtin_tools()]
    grammar = build_grammar(tools, files, dirs)
    assert '"\\"pkg/deep/deeper/far.py\\""' in grammar and '"\\"pkg/deep\\""' in grammar
    LlamaGrammar.from_string(grammar, verbose=False)  # raises on a grammar it cannot read
    LlamaGrammar.from_string(ANSWER_GRAMMAR, verbose=False)


def test_a_repeat_is_a_call_made_this_turn_with_nothing_changed_since() -> None:
    args = {"path": "."}
    turn = [user("List it."), call("list_files", args), result("calc.py")]
    assert repeats(turn, "list_files", {"path": "."})
    assert not repeats(turn, "list_files", {"path": "pkg"})
    assert not repeats(turn, "read_file", {"path": "."})
    # a new request from the user begins a new turn: the same call is new again
    assert not repeats([*turn, call("x", {}, "c2"), result("", "c2"), user("And now?")],
                       "list_files", args)  # fmt: skip
    # after an edit or a command, reading again may show something new
    edited = [*turn, call("edit_file", {"path": "calc.py"}, "c2"), result("ok", "c2")]
    assert not repeats(edited, "list_files", args)
    assert repeats([*turn, call("grep", {"pattern": "a"}, "c2"), result("", "c2")],
                   "list_files", args)  # fmt: skip


@needs_local
@pytest.mark.local_model
@pytest.mark.slow
async def test_a_call_already_answered_is_answered_instead(tmp_path) -> None:
    from agent.providers.local import LocalModel
    from agent.tools import builtin_tools

    ws = workspace(tmp_path)
    messages = [
        user("What does calc.py do?"),
        call("list_files", {"path": "."}),
        result("calc.py\npkg/\n"),
    ]  # SmolLM2 asked for the same listing again here, step after step
    request = Request(
        system="You are Kiln.",
        tools=[t.spec for t in builtin_tools()],
        messages=messages,
        max_tokens=64,
        root=str(ws),
    )
    items = [item async for item in LocalModel(max_tokens=64).stream(request)]
    block = items[-1].message["content"][0]
    if block["type"] == "tool_use":
        assert (block["name"], block["input"]) != ("list_files", {"path": "."})
    else:
        assert block["type"] == "text"


@needs_local
@pytest.mark.e2e
@pytest.mark.local_model
@pytest.mark.slow
def test_every_path_the_model_names_exists(tmp_path) -> None:
    ws = workspace(tmp_path)
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update(KILN_HOME=str(home), PYTHONPATH=str(ROOT), KILN_PROVIDER="local",
               KILN_LOCAL_MAX_TOKENS="64")  # fmt: skip
    kiln = [sys.executable, "-m", "lsp_server"]
    proc = subprocess.run(
        [*kiln, "run", "--mode", "yolo", "--max-steps", "4", "What does pkg/mod.py do?"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    listed = subprocess.run([*kiln, "sessions", "list", "--json"], cwd=ws, env=env,
                            capture_output=True, text=True, check=True)  # fmt: skip
    session = json.loads(listed.stdout)[0]["id"]
    shown = subprocess.run([*kiln, "sessions", "show", "--json", session], cwd=ws, env=env,
                           capture_output=True, text=True, check=True)  # fmt: skip
    blocks = [
        b
        for m in json.loads(shown.stdout)["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
    ]
    calls = [b for b in blocks if b["type"] == "tool_use"]
    assert calls, proc.stdout  # it called at least one tool
    for b in calls:
        if b["name"] in ("read_file", "edit_file", "list_files", "grep") and "path" in b["input"]:
            assert (ws / b["input"]["path"]).exists(), b
    errors = [b for b in blocks if b["type"] == "tool_result" and b.get("is_error")]
    assert not [e for e in errors if "not a directory" in str(e) or "not found" in str(e)]
