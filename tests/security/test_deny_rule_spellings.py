"""Path rules meet the file a path reaches, not only its spelling (docs/security.md section 3): a
symlink the repository ships (`docs/link -> ../secrets`) and a `~/…` spelling of a workspace path
do not get past a deny rule, through the real `kiln run` in `yolo` (deny rules hold in every
mode), for the file tools and for command redirections alike; an allow rule approves a write only
if it also covers where the write lands; and the searches (grep, list_files, search_code) leave
out what a read deny rule hides, as read_file does."""

from __future__ import annotations

import json
from pathlib import Path

from agent.permission_rules import Rules
from agent.permissions import Permissions
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

CANARY = "deny-spelling-canary-7f3a"


def step(tool: str, **args: object) -> dict[str, object]:
    return {"tool_calls": [{"name": tool, "input": args}]}


def hostile_checkout(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    root = home / "proj"
    (root / "secrets").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "secrets" / "key.txt").write_text(CANARY + "\n")
    (root / "open.txt").write_text("visible\n")
    (root / "docs" / "link").symlink_to("../secrets")
    return home, root


def run(
    root: Path, home: Path, kiln_home: Path, script: Path, mode: str = "yolo"
) -> tuple[str, str, list[str]]:
    """`kiln run --mode MODE` with the scripted model: transcript, output, tool results."""
    proc = kiln_run(
        root, home=home, kiln_home=kiln_home, script=script, mode=mode, output="stream-json"
    )
    transcript = stream_transcript(proc)
    results = [json.dumps(content) for content in tool_results(transcript)]
    return transcript.read_text(), proc.stdout + proc.stderr, results


def test_a_symlink_or_a_tilde_does_not_get_past_deny_rules(tmp_path: Path, kiln_home: Path) -> None:
    home, root = hostile_checkout(tmp_path)
    rules = {"permissions": {"deny": ["Read(secrets/**)", "Edit(secrets/**)"]}}
    (kiln_home / "settings.json").write_text(json.dumps(rules))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        step("read_file", path="docs/link/key.txt"),
        step("write_file", path="docs/link/new.txt", content="pwned"),
        step("edit_file", path="docs/link/key.txt", old_text="canary", new_text="pwned"),
        step("run_command", command="echo pwned > ~/proj/secrets/cmd.txt"),
        step("run_command", command="echo pwned | tee docs/link/tee.txt"),
        step("read_file", path="open.txt"),
        "done",
    ]))  # fmt: skip
    transcript, output, results = run(root, home, kiln_home, script)
    assert len(results) == 6, results
    for result in results[:5]:
        assert "denied by rule" in result, result
    assert "visible" in results[5]  # the control: an ordinary read goes through
    assert sorted(p.name for p in (root / "secrets").iterdir()) == ["key.txt"]
    assert (root / "secrets" / "key.txt").read_text() == CANARY + "\n"
    assert CANARY not in transcript and CANARY not in output


def test_an_allow_rule_must_also_cover_where_the_write_lands(tmp_path: Path) -> None:
    _, root = hostile_checkout(tmp_path)
    p = Permissions("ask", Rules(allow=["Edit(docs/**)", "Bash(echo *)"]), root=root)
    assert p.check("write_file", {"path": "docs/guide.md", "content": "x"}).verdict == "allow"
    assert p.check("write_file", {"path": "docs/link/f.txt", "content": "x"}).verdict == "ask"
    assert p.check("run_command", {"command": "echo x > docs/guide.md"}).verdict == "allow"
    assert p.check("run_command", {"command": "echo x > docs/link/f.txt"}).verdict == "ask"


def test_searches_leave_out_what_a_read_deny_rule_hides(tmp_path: Path, kiln_home: Path) -> None:
    home, root = hostile_checkout(tmp_path)
    (root / "app.py").write_text("def canary_check():\n    return 'public canary'\n")
    rules = {"permissions": {"deny": ["Read(secrets/**)"]}}
    (kiln_home / "settings.json").write_text(json.dumps(rules))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        step("grep", pattern="canary"),
        step("search_code", query="deny spelling canary"),
        step("list_files"),
        step("grep", pattern="canary", path="docs"),
        "done",
    ]))  # fmt: skip
    transcript, output, results = run(root, home, kiln_home, script)
    grep_all, search, listing, grep_docs = results
    assert "app.py:2" in grep_all and "secrets" not in grep_all
    assert "secrets" not in search
    assert "app.py" in listing and "secrets" not in listing and "docs/link" not in listing
    assert "no matches" in grep_docs
    assert CANARY not in transcript and CANARY not in output


def test_an_edit_refused_outright_is_not_read_nor_shown(tmp_path: Path, kiln_home: Path) -> None:
    """`ci` mode never edits memory files: the edit is refused before KILN.md is read, so no
    diff of it reaches the output."""
    home, root = hostile_checkout(tmp_path)
    (root / "KILN.md").write_text(f"# Notes\n{CANARY}\n")
    script = tmp_path / "script.json"
    edit = step("edit_file", path="KILN.md", old_text="# Notes", new_text="# Rules")
    script.write_text(json.dumps([edit, "done"]))
    transcript, output, results = run(root, home, kiln_home, script, mode="ci")
    assert "not edited in ci mode" in results[0]
    assert CANARY not in output and '"type": "edit"' not in output
    assert (root / "KILN.md").read_text() == f"# Notes\n{CANARY}\n"


def test_edit_file_is_no_way_to_read_a_read_denied_file(tmp_path: Path, kiln_home: Path) -> None:
    """`edit_file` reads the file to find `old_text`: under `Read(secrets/**)` alone, its "closest
    line" hint quoted the denied key, and found-or-not answered any guess about its content."""
    home, root = hostile_checkout(tmp_path)
    (kiln_home / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(secrets/**)"]}})
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        step("edit_file", path="secrets/key.txt", old_text=CANARY[:-1] + "X", new_text="x"),
        step("edit_file", path="docs/link/key.txt", old_text="deny-", new_text="deny-"),
        "done",
    ]))  # fmt: skip
    transcript, output, results = run(root, home, kiln_home, script)
    assert CANARY not in transcript and CANARY not in output
    assert all("denied by rule Read(secrets/**)" in r for r in results), results
