"""``read_file``'s line range through a real ``kiln run`` (scripted model): an offset past the
end of a file is an error that says how long the file is, not a claim that the file is empty."""

from __future__ import annotations

from pathlib import Path

from tests.security.scripted_run import kiln_run_json, tool_results


def test_an_offset_past_the_end_says_how_long_the_file_is(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "three.py").write_text("a = 1\nb = 2\nc = 3\n")
    (root / "empty.py").write_text("")
    steps = [
        {"tool_calls": [{"name": "read_file", "input": {"path": "three.py", "offset": 3}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "three.py", "offset": 40}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "empty.py"}}]},
    ]
    _, out = kiln_run_json(
        root, steps, home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    last_line, past_end, empty = map(str, tool_results(Path(out["transcript"])))
    assert "c = 3" in last_line and "a = 1" not in last_line
    assert "three.py has 3 lines; offset 40 is past the end" in past_end
    assert "is empty" not in past_end
    assert "empty.py is empty" in empty
