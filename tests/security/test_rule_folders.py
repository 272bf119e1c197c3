"""A deny rule that names a folder (`Read(secrets)`, `Edit(config)`) hid the whole folder from
commands (the sandbox covers it), but the file tools read and wrote the files in it: only the
folder's own path matched (docs/security.md section 3). Through the real `kiln run` in `yolo`,
where deny rules hold as in every mode."""

from __future__ import annotations

import json
from pathlib import Path

from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

CANARY = "rule-folder-canary-0b7e"


def call(name: str, **args: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "input": args}]}


def test_a_rule_on_a_folder_covers_its_files(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "home" / "proj"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text(CANARY + "\n")
    (root / "config").mkdir()
    (root / "config" / "prod.env").write_text("TARGET=prod\n")
    rules = {"permissions": {"deny": ["Read(secrets)", "Edit(config)"]}}
    (kiln_home / "settings.json").write_text(json.dumps(rules))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        call("read_file", path="secrets/key.txt"),
        call("grep", pattern="canary"),
        call("write_file", path="config/prod.env", content="TARGET=evil\n"),
        call("run_command", command="cat secrets/key.txt; echo TARGET=evil > config/prod.env"),
        "done",
    ]))  # fmt: skip
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="yolo",
                    output="stream-json")  # fmt: skip
    results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
    assert CANARY not in results, results
    assert (root / "config" / "prod.env").read_text() == "TARGET=prod\n", results
    assert "denied by rule Read(secrets)" in results and "denied by rule Edit(config)" in results
