"""What the edit tools answer names the file relative to the workspace, as `list_files` and
`grep` do, however the model spelled the path: an absolute path put the host's folders into
the model's context, so a session's messages differed from one machine to the next. The real
`kiln run` with the scripted model; the answers are read back from the transcript."""

from __future__ import annotations

from pathlib import Path

from tests.security.scripted_run import kiln_run_json, tool_results


def step(tool: str, **args: object) -> dict[str, object]:
    return {"tool_calls": [{"name": tool, "input": args}]}


def test_edit_answers_name_the_workspace_relative_path(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("a = 1\n")
    outside = tmp_path / "outside.txt"
    proc, result = kiln_run_json(
        root,
        [
            step("write_file", path=str(root / "src" / "new.py"), content="b = 2\n"),
            step(
                "edit_file", path=str(root / "src" / "app.py"), old_text="a = 1", new_text="a = 3"
            ),
            step("edit_file", path=f"{root}/src/../src/app.py", old_text="zzz", new_text="y"),
            step("write_file", path="./src//new.py", content="b = 4\n"),
            step("write_file", path=str(outside), content="no\n"),
        ],
        home=tmp_path,
        kiln_home=kiln_home,
        script=tmp_path / "script.json",
    )
    assert result["stop_reason"] == "end_turn", (result, proc.stderr)
    answers = tool_results(Path(result["transcript"]))
    assert answers[0] == "edited src/new.py (+1 -0 lines)", answers
    assert answers[1] == "edited src/app.py (+1 -1 lines)", answers
    assert "old_text not found in src/app.py\n" in answers[2], answers
    assert answers[3] == "edited src/new.py (+1 -1 lines)", answers
    assert not any(str(tmp_path) in answers[n] for n in (0, 1, 3)), answers
    # A path outside the workspace is refused as before, naming what was asked.
    assert f"path {outside} resolves outside the workspace" in answers[4], answers
    assert not outside.exists()
    assert (root / "src" / "app.py").read_text() == "a = 3\n"
    assert (root / "src" / "new.py").read_text() == "b = 4\n"
