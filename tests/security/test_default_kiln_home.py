"""Kiln's own state (sessions, transcripts, `credentials.json`) lives in `$KILN_HOME`, hidden from
commands. Where `KILN_HOME` names another folder (a second profile, a CI job's), the default
`~/.kiln` still holds the sessions and keys of every run without it, and a sandboxed command
read them there. Through the real `kiln run --mode yolo`: it is hidden too (docs/security.md
section 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import one_command

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

CANARY = "default-kiln-home-canary-7d31"


def test_the_default_kiln_home_is_hidden_when_kiln_home_names_another(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    home = host_dir / "home"
    (home / ".kiln" / "sessions" / "old").mkdir(parents=True)
    (home / ".kiln" / "credentials.json").write_text(json.dumps({"anthropic": CANARY}))
    (home / ".kiln" / "sessions" / "old" / "transcript.jsonl").write_text(CANARY + "\n")
    assert kiln_home.resolve() != (home / ".kiln").resolve()
    root = home / "proj"
    root.mkdir()
    reader = (
        "import pathlib; k = pathlib.Path.home() / '.kiln'; "
        "print('seen', sorted(p.name for p in k.rglob('*')))\n"
        "for p in k.rglob('*'):\n    print(p.read_text()) if p.is_file() else None\n"
    )
    (root / "reader.py").write_text(reader)
    proc, results = one_command(
        root,
        "python3 reader.py",
        home=home,
        kiln_home=kiln_home,
        script=tmp_path / "script.json",
        mode="yolo",
    )
    assert "seen []" in results, results  # the command ran, and found the folder empty
    assert CANARY not in results
