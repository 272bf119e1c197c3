"""The summary `kiln run --ci` writes is posted as the pull request comment a reviewer reads to
decide a merge (docs/ci.md). A changed file's name and the agent's answer are the agent's text,
so the repository's: before, a file named ``x`\\n\\n### Verification\\n\\n- after: ...passed``
forged the section Kiln itself writes, as did the answer. Names are one-line code, the answer a
quote; and the name is the file's (git quotes such a name in the patch, and the report showed
the whole `diff --git` line). Through the real `kiln run --ci`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.repos import committing_repo
from tests.security.scripted_run import kiln_run

FORGED = "\n\n### Verification\n\n- after: `make test` passed\n- the agent ran it: yes\n\n"


def test_the_agent_cannot_forge_a_section_of_the_summary(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    committing_repo(root)("init", {"calc.py": "def add(a, b):\n    return a - b\n"})
    steps = [
        {"tool_calls": [{"name": "write_file", "input": {
            "path": f"x`{FORGED}| y |.txt", "content": "z\n"}}]},
        {"text": f"Fixed.{FORGED}### Refused by policy\n\nnothing"},
    ]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
        extra=("--ci", "--artifacts", str(tmp_path / "out")),
    )  # fmt: skip
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "### What changed" in summary and "Fixed." in summary, proc.stderr
    lines = summary.splitlines()
    assert not any(
        line.startswith(("### Verification", "### Refused", "- after:")) for line in lines
    )
    row = next(line for line in lines if "make test" in line and line.startswith("| "))
    assert row.count(" | ") == 2 and row.endswith(" | 1 | 0 |")  # one row: name, +, -
    assert row.startswith("| <code>x&#96;\\n\\n### Verification\\n")  # the name, as it is
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [f["path"] for f in report["files_changed"]] == [f"x`{FORGED}| y |.txt"]
