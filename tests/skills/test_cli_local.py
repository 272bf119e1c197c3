from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from lsp_server.cli.skills_local import list_cmd, validate_cmd

from .conftest import FIXTURES, SkillFactory


def test_validate_valid_folder_of_skills_exits_zero() -> None:
    result = CliRunner().invoke(validate_cmd, [str(FIXTURES / "anthropic")])
    assert result.exit_code == 0
    assert result.output.count(": valid") == 3


def test_validate_lists_every_problem_and_exits_one(
    tmp_path: Path, make_skill: SkillFactory
) -> None:
    bad = make_skill(tmp_path, "bad-skill", frontmatter="name: Bad--Skill\ntags: [x]\n")
    result = CliRunner().invoke(validate_cmd, [str(bad), "--json"])
    assert result.exit_code == 1
    problems = json.loads(result.output)[str(bad)]
    assert len(problems) == 5
    assert "missing required field 'description'" in problems


def test_kiln_skills_validate_as_a_real_process(tmp_path: Path, make_skill: SkillFactory) -> None:
    bad = make_skill(tmp_path, "x", frontmatter="name: y\ndescription: ok\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server",
            "skills",
            "validate",
            str(bad),
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        f"{bad}: 'name' 'y' must equal the folder name 'x'",
        f"{tmp_path / 'missing'}: path does not exist",
    ]
    assert proc.stderr.strip() == "kiln: 2 problem(s) in 2 of 2 skill(s)"
    assert "Traceback" not in proc.stderr


def test_list_shows_precedence_and_json(
    tmp_path: Path, make_skill: SkillFactory, kiln_home: Path
) -> None:
    make_skill(tmp_path / ".agents" / "skills", "deploy", "Project deploy.")
    make_skill(tmp_path / ".agents" / "skills", "lint", "Project lint.")
    make_skill(kiln_home / "skills", "deploy", "User deploy.")
    make_skill(kiln_home / "skills", "notes", "User notes.")
    result = CliRunner().invoke(list_cmd, ["--root", str(tmp_path), "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    names = [(r["name"], r["scope"], r["third_party"]) for r in rows]
    assert names == [("deploy", "user", True), ("lint", "project", False), ("notes", "user", True)]
    assert [r["description"] for r in rows if r["name"] == "deploy"] == ["User deploy."]
    assert "warning: .agents/skills/deploy: skill deploy ignored: your skill" in result.stderr
