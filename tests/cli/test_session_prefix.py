"""Every command that takes a session id takes a unique start of it (ids are long:
``20261202-163712-1a2b3c4d``, what a user copies from `kiln sessions list` or the report); an
ambiguous start is one line naming the sessions it starts, exit 2, and nothing is run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def kiln(root: Path, *args: str, script: list | None = None) -> subprocess.CompletedProcess:
    script_path = root.parent / "script.json"
    script_path.write_text(json.dumps(script or ["done"]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script_path)}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def new_session(root: Path, answer: str) -> str:
    proc = kiln(root, "run", "--output-format", "json", "say it", script=[answer])
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["session_id"])


def shortest_unique(ids: list[str], own: str) -> str:
    for n in range(1, len(own) + 1):
        if sum(i.startswith(own[:n]) for i in ids) == 1:
            return own[:n]
    return own


def test_a_unique_prefix_names_the_session_and_an_ambiguous_one_is_refused(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    ids = [new_session(root, f"answer number {n}") for n in range(3)]
    first = ids[0]
    prefix = shortest_unique(ids, first)
    assert prefix != first

    shown = kiln(root, "sessions", "show", prefix, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["session"]["id"] == first
    context = kiln(root, "context", "show", prefix, "--json")
    assert context.returncode == 0, context.stderr
    diff = kiln(root, "context", "diff", prefix, "--json")
    assert diff.returncode == 0, diff.stderr
    resumed = kiln(root, "run", "--resume", prefix, "--output-format", "json", "again",
                   script=["resumed answer"])  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["session_id"] == first
    messages = json.loads(kiln(root, "sessions", "show", first, "--json").stdout)["messages"]
    assert "resumed answer" in json.dumps(messages)

    common = os.path.commonprefix(ids)
    for args in (["sessions", "show", common], ["context", "show", common],
                 ["context", "diff", common], ["run", "--resume", common, "again"]):  # fmt: skip
        proc = kiln(root, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        line = proc.stderr.strip()
        assert "\n" not in line and "ambiguous" in line and first in line, line
        assert "Traceback" not in proc.stderr
    after = json.loads(kiln(root, "sessions", "show", first, "--json").stdout)["messages"]
    assert after == messages  # the refused --resume ran nothing

    only = kiln(root, "sessions", "show", "")  # the start of every id names none
    assert only.returncode == 2 and only.stderr.startswith("kiln: the session id is empty")
    missing = kiln(root, "sessions", "show", "zz")
    assert missing.returncode == 2 and missing.stderr.startswith("kiln: no session 'zz'")


def test_an_id_that_is_no_session_is_named_short(tmp_path: Path) -> None:
    """A wrong id is named in the refusal, but a pasted page (a transcript instead of its id)
    was echoed whole: one "line" of 100,000 characters. It is cut to its start now."""
    pasted = "20261202-163712 " + "transcript text " * 6000
    for args in (("sessions", "show"), ("context", "show"), ("context", "diff")):
        proc = kiln(tmp_path, *args, pasted)
        assert proc.returncode == 2 and proc.stderr.startswith("kiln: no session '20261202-1637")
        assert len(proc.stderr) < 200 and proc.stderr.count("\n") == 1, proc.stderr[:300]
