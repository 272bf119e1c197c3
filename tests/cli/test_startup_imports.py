"""What a short `kiln` process loads: most end-to-end tests, editors and scripts start one, so
a heavy module a command does not use is paid on every start (bench/startup.py measures it).
Real processes, read through `python -X importtime`: the modules a command imported are the
ones it paid for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def imported(root: Path, *args: str, env: dict[str, str] | None = None) -> set[str]:
    """The top-level packages ``kiln ARGS`` imported (the command must succeed): a package
    imported by ``importlib.import_module`` has no line of its own, its submodules do."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "lsp_server", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }


def scripted(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    return {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}


def test_run_index_and_search_do_not_load_numpy(failing_repo: Path, tmp_path: Path) -> None:
    """sqlite-utils imports numpy when it can (only to store numpy scalars, which Kiln never
    passes it): ~0.12 s of CPU in each of these commands, for nothing."""
    run = imported(failing_repo, "run", "--mode", "yolo", "--output-format", "json", "hi",
                   env=scripted(tmp_path))  # fmt: skip
    index = imported(failing_repo, "index")
    search = imported(failing_repo, "search", "add")
    sessions = imported(failing_repo, "sessions", "list")
    for modules in (run, index, search, sessions):
        assert "sqlite_utils" in modules  # the session store / index were opened
        assert "numpy" not in modules


def test_a_run_loads_what_it_uses(failing_repo: Path, tmp_path: Path) -> None:
    """A JSON run that only answers loads no argument validator (jsonschema), no YAML (no
    skill in the workspace), no version ranges (no skill grant), no terminal styling (rich),
    no grep engine (regex) and not the index's store or watcher: ~0.1 s of CPU together. A
    run whose model calls grep loads what grep and argument checking need, and works."""
    unused = {"jsonschema", "yaml", "nodesemver", "rich", "regex", "watchdog", "pathspec"}
    run = imported(failing_repo, "run", "--mode", "yolo", "--output-format", "json", "hi",
                   env=scripted(tmp_path))  # fmt: skip
    assert not unused & run
    grep = {"tool_calls": [{"name": "grep", "input": {"pattern": "return a - b"}}]}
    (tmp_path / "script.json").write_text(json.dumps([grep, "done"]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(tmp_path / "script.json")}
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", "--output-format",
         "stream-json", "go"],
        cwd=failing_repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]
    done = [e for e in results if e["type"] == "tool_call_update" and e["status"] == "completed"]
    assert done and "calc.py:3:     return a - b" in done[0]["output"], proc.stdout[-2000:]


def test_registry_store_and_numpy_after_it(tmp_path: Path) -> None:
    """The registry's store opens without numpy too, and numpy imported afterwards in the same
    process (the embedded model's runtime uses it) is the real one."""
    code = (
        "import sys; from pathlib import Path\n"
        "from skills_registry.registry.sqlite_schema import migrate\n"
        f"migrate(Path({str(tmp_path / 'registry.db')!r}))\n"
        "print('numpy' in sys.modules)\n"
        "import numpy, sqlite_utils\n"
        "print(numpy.zeros(2).tolist())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert proc.stdout.split("\n")[:2] == ["False", "[0.0, 0.0]"]


@pytest.mark.parametrize(
    "args",
    [["run", "--mode", "yolo", "--output-format", "json", "hi"], ["lsp"], ["acp"]],
    ids=["run", "lsp", "acp"],
)
def test_what_a_command_imported_is_out_of_the_collections(tmp_path: Path, args: list[str]) -> None:
    """Interpreter shutdown collects garbage several times over everything the process holds,
    and collections during the imports of pygls or the ACP SDK ran again and again: the modules
    a command imported (most of its objects) are frozen out of those scans. The servers read
    an empty stdin and end."""
    code = (  # counted at exit, as shutdown's collections begin
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print(gc.get_freeze_count(), len(gc.get_objects()), "
        "gc.isenabled(), file=sys.stderr))\n"
        "from lsp_server.cli import main\n"
        f"sys.exit(main({args!r}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=scripted(tmp_path),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    if args[0] == "run":
        assert json.loads(proc.stdout)["outcome"] == "ok"
    frozen, collectable, enabled = proc.stderr.split()[-3:]
    assert int(frozen) > 2 * int(collectable), proc.stderr[-300:]
    assert enabled == "True"  # paused for the imports only


def test_threads_opening_stores_at_once_wait_for_one_import() -> None:
    """The editor's server opens the session store and an index from several threads: while
    one imports sqlite-utils, the others wait for it rather than take the half-made module
    ("partially initialized module 'sqlite_utils' has no attribute 'Database'")."""
    code = (
        "import sqlite3, sys, threading\n"
        "from kiln_errors.sqlite_common import load_sqlite_utils\n"
        "start = threading.Barrier(8); errors = []\n"
        "def open_one():\n"
        "    start.wait()\n"
        "    try:\n"
        "        load_sqlite_utils().Database(sqlite3.connect(':memory:'))\n"
        "    except Exception as exc:\n"
        "        errors.append(repr(exc))\n"
        "threads = [threading.Thread(target=open_one) for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(errors)\n"
    )
    for _ in range(3):  # a race: each round has 8 chances to lose it
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
        )
        assert proc.stdout.strip() == "[]", proc.stdout[-1000:]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_provider_sdk_is_imported_once_with_the_collector_paused(
    tmp_path: Path, provider: str
) -> None:
    """The SDKs' thousands of pydantic classes (~2 s of CPU for anthropic's with the collector
    running): imported when the first request is sent, then frozen; the collector runs again
    after, and the run answers through the real SDK."""
    from agent.testing.wire_server import WireServer

    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print(gc.get_freeze_count(), len(gc.get_objects()), "
        "gc.isenabled(), file=sys.stderr))\n"
        "from lsp_server.cli import main\n"
        "sys.exit(main(['run', '--mode', 'yolo', '--output-format', 'json', 'hi']))\n"
    )
    with WireServer(["hello"]) as srv:
        env = dict(os.environ)
        if provider == "anthropic":
            env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=srv.anthropic_base_url)
        else:
            env.update(OPENAI_BASE_URL=srv.openai_base_url)
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["result"] == "hello"
    frozen, collectable, enabled = proc.stderr.split()[-3:]
    assert int(frozen) > 5 * int(collectable), proc.stderr[-300:]
    assert enabled == "True"


def test_skills_commands_that_make_no_request_do_not_load_httpx(tmp_path: Path) -> None:
    """`import httpx` also imports its command-line client (click, rich, pygments; ~0.05 s of
    the ~0.06 s it costs) whenever they are installed, as they are with Kiln: the registry
    client imports httpx only when it makes a request, so `skills list`, `validate`, `remove`
    and `registry audit` load none of it."""
    env = {**os.environ, "KILN_HOME": str(tmp_path / "home")}
    skill = tmp_path / ".kiln" / "skills" / "notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: notes\ndescription: Keep notes.\n---\nBody\n")
    data = tmp_path / "data"
    token = subprocess.run(
        [sys.executable, "-m", "lsp_server", "registry", "token", "--namespace", "acme",
         "--data", str(data)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert token.returncode == 0, token.stderr
    for args in (("skills", "list"), ("skills", "validate", str(skill)),
                 ("registry", "audit", "--data", str(data))):  # fmt: skip
        modules = imported(tmp_path, *args, env=env)
        assert "skills_registry" in modules, args
        assert not {"httpx", "rich", "pygments"} & modules, args
