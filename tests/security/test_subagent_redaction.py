"""`kiln run --ci` redacts a checkout's token (and the environment's secrets) from every tool
output (docs/security.md section 8), but the `task` tool's sub-agent was configured without
redaction: its `read_file .git/config` sent the token to the model provider and stored it in the
child session's transcript under `$KILN_HOME`. Through the real `kiln run --ci`, the sub-agent
reading the config: the token is in no file Kiln wrote."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from tests.repos import committing_repo, git
from tests.security.hostile import everything_written
from tests.security.scripted_run import kiln_run, tool_results

TOKEN = "ghs_SubagentCanary0123456789abcdefXYZ"


def call(name: str, **args: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "input": args}]}


def test_the_sub_agent_redacts_what_the_run_redacts(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    committing_repo(root)("init", {"calc.py": "def add(a, b):\n    return a + b\n"})
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    git(root, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {basic}")
    steps = [
        call("task", description="Look at the repository's git config."),
        call("read_file", path=".git/config"),  # the sub-agent's first step
        {"text": "The config sets an extra header."},  # its answer
        {"text": "Done."},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
                    extra=("--ci",))  # fmt: skip
    result = json.loads(proc.stdout)
    results = json.dumps(tool_results(Path(result["transcript"])))
    assert "sub-agent" in results or "steps" in results, results  # the task ran
    written = everything_written(kiln_home) + proc.stdout + proc.stderr
    assert "extraheader" in written  # the child read the config...
    assert TOKEN not in written and basic not in written  # ...redacted
