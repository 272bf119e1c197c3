"""A repository's skill must be the repository's text (docs/security.md section 6): a skill folder
or SKILL.md that is a link to one of the user's private skills (or any SKILL.md-shaped file)
would hand that text to the model, and `skill{file}` every file beside it. Through the real
`kiln run`; the skills are skipped with a warning."""

from __future__ import annotations

from pathlib import Path

from tests.security.scripted_run import kiln_run_json

PRIVATE = "private-skill-canary-3d7e"


def private_skill(folder: Path, name: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: internal {PRIVATE} notes\n---\n{PRIVATE} body\n"
    )
    (folder / "token.txt").write_text(PRIVATE + "\n")


def test_a_repository_skill_that_links_outside_is_skipped(tmp_path: Path, kiln_home: Path) -> None:
    home = tmp_path / "home"
    private_skill(home / "private" / "linkedmd", "linkedmd")
    private_skill(home / "private" / "linkeddir", "linkeddir")
    root = tmp_path / "repo"
    (root / ".kiln" / "skills" / "linkedmd").mkdir(parents=True)
    (root / ".kiln" / "skills" / "linkedmd" / "SKILL.md").symlink_to(
        home / "private" / "linkedmd" / "SKILL.md"
    )
    (root / ".kiln" / "skills" / "linkeddir").symlink_to(home / "private" / "linkeddir")
    (root / ".kiln" / "skills" / "own").mkdir()
    (root / ".kiln" / "skills" / "own" / "SKILL.md").write_text(
        "---\nname: own\ndescription: the repository's own helper\n---\nOWN-BODY\n"
    )
    proc, out = kiln_run_json(root, [
        {"tool_calls": [{"name": "skill", "input": {"name": "linkedmd"}}]},
        {"tool_calls": [{"name": "skill", "input": {"name": "linkeddir", "file": "token.txt"}}]},
        {"tool_calls": [{"name": "skill", "input": {"name": "own"}}]},
    ], home=home, kiln_home=kiln_home, script=tmp_path / "script.json")  # fmt: skip
    session = Path(out["transcript"]).parent
    stored = "\n".join(p.read_text(errors="replace") for p in session.rglob("*") if p.is_file())
    assert "OWN-BODY" in stored  # the control: the repository's own skill is used
    assert PRIVATE not in stored + proc.stdout + proc.stderr
    assert proc.stderr.count("resolves outside the repository") == 2, proc.stderr


def test_a_repository_skills_tool_declaration_that_links_outside_is_skipped(
    tmp_path: Path, kiln_home: Path
) -> None:
    """Before: the skill itself had to be inside, but `tools/*.json` (or the `tools` folder)
    could be a link to the user's private skill's tools, whose descriptions `tool_search`
    then showed the model."""
    home = tmp_path / "home"
    private = home / "private" / "ops"
    private_skill(private, "ops")
    (private / "tools").mkdir()
    (private / "tools" / "rotate.json").write_text(
        f'{{"name": "rotate", "description": "rotate {PRIVATE} keys", "command": "run.py"}}'
    )
    root = tmp_path / "repo"
    for name in ("linkedjson", "linkedtools"):
        skill = root / ".kiln" / "skills" / name
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: rotate things\n---\nx\n")
        (skill / "run.py").write_text("print('ran')\n")
    tools = root / ".kiln" / "skills" / "linkedjson" / "tools"
    tools.mkdir()
    (tools / "rotate.json").symlink_to(private / "tools" / "rotate.json")
    (root / ".kiln" / "skills" / "linkedtools" / "tools").symlink_to(private / "tools")
    proc, out = kiln_run_json(root, [
        {"tool_calls": [{"name": "tool_search", "input": {"query": "rotate keys"}}]},
    ], home=home, kiln_home=kiln_home, script=tmp_path / "script.json")  # fmt: skip
    session = Path(out["transcript"]).parent
    stored = "\n".join(p.read_text(errors="replace") for p in session.rglob("*") if p.is_file())
    assert "No deferred tool matches" in stored
    assert PRIVATE not in stored + proc.stdout
    assert proc.stderr.count("resolves outside the skill folder") == 2, proc.stderr
