"""The prompt cache hits across what a user does between and during turns, as the provider
measures it: every turn its own `kiln run --resume` process (another hash seed, time zone and
locale each time) through the real anthropic and openai SDKs, against the wire server, which
counts cache reads as the APIs do (Anthropic's breakpoints and 20-block lookback, per model:
``agent.testing.wire_cache``).
Between turns the user edits a file, installs and removes a skill, changes the permission
mode and the model; during them the agent reads, lists, greps, runs a command whose output is
cut, remembers a note (KILN.md rewritten) and fans out twelve reads. Each request must read
from the cache all of the request before it (the first one with another model excepted: a
provider's cache is per model), and no request may carry more than four breakpoints."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import ROOT, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SLACK = 8  # tokens: the closing brackets after the last breakpoint are never cached


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": args}]}


def _turn(api: str, root: Path, srv: WireServer, home: Path, session: str, task: str,
          *extra: str, **env: str) -> tuple[str, list[dict[str, Any]]]:  # fmt: skip
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    environ.update(KILN_HOME=str(home), PYTHONPATH=str(ROOT), KILN_PROVIDER=api, **env)
    if api == "anthropic":
        environ.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.url)
    else:
        environ.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=srv.openai_base_url,
                       KILN_MODEL="gpt-4.1", KILN_OPENAI_CACHE_KEY="on")  # fmt: skip
    cmd = [sys.executable, "-m", "lsp_server", "run", "--root", str(root), "--mode", "yolo",
           "--output-format", "stream-json", *extra, *(["--resume", session] if session else [])]  # fmt: skip
    proc = subprocess.run([*cmd, task], env=environ, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    result = next(e for e in events if e.get("type") == "result")
    return result["session_id"], [e for e in events if e.get("type") == "usage"]


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_every_request_reads_the_one_before_from_the_cache(tmp_path: Path, api: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "KILN.md").write_text("Be brief.\n")
    for i in range(12):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    fan_out = {"tool_calls": [{"name": "read_file", "input": {"path": f"m{i}.py"}}
                              for i in range(12)]}  # fmt: skip
    steps = [
        _call("read_file", path="m1.py"), "a",
        _call("list_files"), "b",
        _call("remember", text="Prefer pytest."), "c",
        _call("grep", pattern="def"), "d",
        _call("run_command", command="seq 1 20000"), "e",
        fan_out, "f",
        _call("search_code", query="f3"), "g",
        _call("read_file", path="m2.py"), "h",
        _call("read_file", path="m3.py"), "i",
    ]  # fmt: skip
    skill = root / ".kiln" / "skills" / "aaa"
    between = [
        lambda: None,
        lambda: (root / "m1.py").write_text("def f1():\n    return 'edited'\n"),
        lambda: None,
        lambda: (skill.mkdir(parents=True), (skill / "SKILL.md").write_text(
            "---\nname: aaa\ndescription: aaa chores.\n---\nbody\n")),
        lambda: None,
        lambda: None,
        lambda: None,
        lambda: None,
        lambda: shutil.rmtree(skill),
    ]  # fmt: skip
    other = "claude-opus-4-1" if api == "anthropic" else "gpt-4o"
    extra = {6: ("--mode", "ask"), 7: ("--model", other)}
    zones = ["UTC", "Pacific/Kiritimati", "America/Adak", "Asia/Kolkata"]
    usages: list[dict[str, Any]] = []
    session = ""
    with WireServer(steps) as srv:
        for n, change in enumerate(between):
            change()
            env = {"TZ": zones[n % 4], "LC_ALL": "C" if n % 2 else "C.UTF-8",
                   "PYTHONHASHSEED": str(n)}  # fmt: skip
            session, used = _turn(api, root, srv, tmp_path / "home", session, f"task {n}",
                                  *extra.get(n, ()), **env)  # fmt: skip
            usages += [{**u, "turn": n} for u in used]
        raws = [r.raw for r in srv.requests if r.method == "POST"]
    assert breaks(raws) == []  # nothing already sent changed
    assert max(r.count(b'"cache_control"') for r in raws) <= 4
    keys = {json.loads(r).get("prompt_cache_key") for r in raws}
    assert len(keys) == 1 and (api == "anthropic") == (keys == {None})  # one key, OpenAI's
    assert len(usages) == len(raws) == 2 * len(between)
    switched = next(i for i, u in enumerate(usages) if u["turn"] == 7)
    for i in range(1, len(usages)):
        before, now = usages[i - 1], usages[i]
        if i == switched:
            assert now["cache_read_tokens"] == 0  # another model: its own cache
            continue
        whole = before["input_tokens"] + before["cache_read_tokens"] + before["cache_write_tokens"]
        assert now["cache_read_tokens"] >= whole - SLACK, (i, before, now)
