"""A workspace under `home/proj` with `config/app.yml` behind a `Write(config/**)` deny rule,
and one `run_command` through the real `kiln run` (without the sandbox in yolo, which holds the
deny rules on its own): the shell check's write tests that move or reach into folders."""

from __future__ import annotations

import json
from pathlib import Path

from tests.security.scripted_run import kiln_run, stream_transcript, tool_results


def workspace(tmp_path: Path, kiln_home: Path) -> Path:
    root = tmp_path / "home" / "proj"
    (root / "config").mkdir(parents=True)
    (root / "config" / "app.yml").write_text("kept\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    (kiln_home / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Write(config/**)"]}})
    )
    return root


def run(root: Path, tmp_path: Path, kiln_home: Path, command: str, mode: str) -> str:
    script = tmp_path / "script.json"
    call = {"name": "run_command", "input": {"command": command}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "done"]))
    extra = ("--no-sandbox",) if mode == "yolo" else ()
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode=mode,
                    output="stream-json", extra=extra)  # fmt: skip
    return " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
