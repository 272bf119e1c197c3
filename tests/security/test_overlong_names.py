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


# Sixty folders of fifty characters each: about 3,000 characters, every name under 255 bytes.
DEEP = "/".join(f"d{i:02d}" + "q" * 47 for i in range(60))


def test_a_long_path_is_named_once_and_cut_in_every_refusal(
    tmp_path: Path, kiln_home: Path
) -> None:
    """A path of 3,000 characters that does not exist, or leads through a link loop, was
    quoted whole in the answer ("… does not exist"), and a loop's answer named it twice, the
    second time absolute ("Symlink loop from '/tmp/…'"). Each answer is now one short line."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("print('hi')\n")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    calls = [
        ("read_file", {"path": DEEP}, "does not exist"),
        ("edit_file", {"path": DEEP, "old_text": "a", "new_text": "b"}, "does not exist"),
        ("list_files", {"path": DEEP}, "does not exist"),
        ("read_file", {"path": f"loop1/{DEEP}"}, "Symlink loop"),
        ("write_file", {"path": f"loop1/{DEEP}", "content": "x"}, "Symlink loop"),
        ("read_file", {"path": "../" * 1000 + "etc/passwd"}, "resolves outside the workspace"),
    ]
    steps = [{"tool_calls": [{"name": n, "input": a}]} for n, a, _ in calls]
    proc, out = kiln_run_json(
        root, steps, home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    assert proc.returncode == 0, proc.stderr
    results = [str(r) for r in tool_results(Path(out["transcript"]))]
    assert len(results) == len(calls), results
    for (tool, _, reason), said in zip(calls, results, strict=True):
        message = next(line for line in said.splitlines() if line.startswith("message: "))
        assert reason in message and "…" in message, (tool, said)
        assert len(message) < 300 + len(str(root)), (tool, message)  # the root is named
        assert str(root / "loop1") not in said, (tool, said)  # not again, absolute
        assert len(said) < 800, (tool, said)
    assert sorted(p.name for p in root.iterdir()) == ["app.py", "loop1", "loop2"]
