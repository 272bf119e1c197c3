"""A tool call naming a path the file system cannot hold (a name past 255 bytes: ENAMETOOLONG
out of the system call) is the input's fault, not the tool's. Its answer was the OSError's text
with the whole path twice (in the arguments and again, absolute, in the message) and the hint
"this looks like a tool bug; try another approach". Now: the path once, cut to its start and
end, the system's reason in one short line, and what to do instead. Through the real `kiln run`
with the scripted model; the answers are read from the session's transcript."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run_json, tool_results

pytestmark = pytest.mark.e2e

LONG = "n" * 300  # one component past NAME_MAX (255 bytes)


def test_a_name_too_long_fails_in_one_short_line_without_a_tool_bug_hint(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("print('hi')\n")
    calls = [
        ("read_file", {"path": LONG}),
        ("list_files", {"path": LONG}),
        ("write_file", {"path": LONG, "content": "x"}),
        ("edit_file", {"path": f"{LONG}.py", "old_text": "a", "new_text": "b"}),
        ("grep", {"pattern": "hi", "path": LONG}),
    ]
    steps = [{"tool_calls": [{"name": n, "input": a}]} for n, a in calls]
    proc, out = kiln_run_json(
        root, steps, home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    assert proc.returncode == 0, proc.stderr
    results = [str(r) for r in tool_results(Path(out["transcript"]))]
    assert len(results) == len(calls), results
    for (tool, _), said in zip(calls, results, strict=True):
        assert "message: File name too long\n" in said, (tool, said)
        assert "tool bug" not in said, (tool, said)
        assert said.count("n" * 100) == 1 and "…" in said, (tool, said)  # once, cut
        assert len(said) < 500, (tool, said)
    assert sorted(p.name for p in root.iterdir()) == ["app.py"]  # nothing made
