"""`kiln sessions` over a real session store written by a real (scripted) session."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, DiskHost, Session


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_list_show_search(failing_repo: Path) -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "read_file", "input": {"path": "calc.py"}}]},
            "We decided to keep the zebra-stripes helper as it is.",
        ]
    )
    session = Session.create(
        failing_repo, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model
    )
    await session.prompt("Why does add subtract?")
    listed = kiln("sessions", "list", "--json", cwd=failing_repo)
    assert listed.returncode == 0
    rows = json.loads(listed.stdout)
    assert rows[0]["id"] == session.id and rows[0]["title"] == "Why does add subtract?"
    shown = kiln("sessions", "show", session.id, cwd=failing_repo)
    assert "[tool call] read_file" in shown.stdout and "zebra-stripes" in shown.stdout
    # usage in the words the run's own summary line uses, not a Python dict
    assert re.search(r"^tokens in \d+ \(cache read \d+, cache write \d+\), out \d+; cost \$",
                     shown.stdout, re.M)  # fmt: skip
    found = kiln("sessions", "search", "zebra stripes", "--json", cwd=failing_repo)
    hits = json.loads(found.stdout)
    assert hits and hits[0]["session_id"] == session.id and "zebra" in hits[0]["excerpt"].lower()
    elsewhere = kiln("sessions", "search", "zebra", cwd=failing_repo.parent)
    assert "no matching sessions" in elsewhere.stdout
    missing = kiln("sessions", "show", "no-such-id", cwd=failing_repo)
    assert missing.returncode == 2 and missing.stderr.startswith("kiln: no session")


def test_a_damaged_session_store_is_set_aside_not_fatal(tmp_path: Path, kiln_home: Path) -> None:
    (kiln_home / "sessions.db").write_bytes(b"garbage, not a database" * 100)
    proc = kiln("sessions", "list", cwd=tmp_path)
    assert proc.returncode == 0 and "no sessions" in proc.stdout
    assert "session store was damaged" in proc.stderr and "Traceback" not in proc.stderr
    kept = list(kiln_home.glob("sessions.db.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b"garbage")
