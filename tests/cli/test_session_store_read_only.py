"""A KILN_HOME on a read-only disk (a home mounted read-only in a container, a backup mounted to
look something up), through the real `kiln` process: the commands that only read sessions read
the store as it is; a run, which must write, is refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_sessions_are_read_from_a_read_only_kiln_home(tmp_path: Path, read_only_disk: Path) -> None:
    """Before, `kiln sessions list|show|search` and `kiln context show|diff` each failed with
    "cannot open the session store …: unable to open database file"."""
    disk = read_only_disk
    home, work = disk / "home", tmp_path / "work"
    work.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["The zebra answer."]))
    env = {**os.environ, "KILN_HOME": str(home), "KILN_PROVIDER": "scripted",
           "KILN_SCRIPT": str(script)}  # fmt: skip

    def kiln(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "lsp_server", *args],
            cwd=work, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    first = kiln("run", "a question", "--output-format", "json")
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout)["session_id"]
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    note = f"kiln: {home} is read-only: reading the session store as it is\n"
    listed = kiln("sessions", "list", "--json")
    assert (listed.returncode, listed.stderr) == (0, note), listed.stderr
    assert [row["id"] for row in json.loads(listed.stdout)] == [sid]
    for args in (("sessions", "show", sid), ("sessions", "search", "zebra"),
                 ("context", "show"), ("context", "diff", sid[:20])):  # fmt: skip
        proc = kiln(*args)
        assert (proc.returncode, proc.stderr) == (0, note), (args, proc.stderr)
        assert sid in proc.stdout or "step 1" in proc.stdout, proc.stdout
    again = kiln("run", "another question")
    assert again.returncode == 1 and len(again.stderr.strip().splitlines()) == 1, again.stderr
    assert "cannot open the session store" in again.stderr
