from __future__ import annotations

from pathlib import Path

import pytest

from skills_registry.errors import SkillInvalid
from skills_registry.spec import parse_frontmatter, validate_skill_dir

from .conftest import FIXTURES, SkillFactory


def problems_for(
    tmp_path: Path, make_skill: SkillFactory, head: str, folder: str = "my-skill"
) -> list[str]:
    return validate_skill_dir(make_skill(tmp_path, folder, frontmatter=head))


def test_minimal_valid_skill_has_no_problems(tmp_path: Path, make_skill: SkillFactory) -> None:
    assert validate_skill_dir(make_skill(tmp_path, "pdf-processing")) == []


def test_all_optional_fields_valid(tmp_path: Path, make_skill: SkillFactory) -> None:
    head = (
        "name: my-skill\ndescription: Extract text.\nlicense: Apache-2.0\n"
        "compatibility: Requires git\nmetadata:\n  author: me\n  version: '1.0'\n"
        "allowed-tools: Bash(git add:*) Read\n"
    )
    assert problems_for(tmp_path, make_skill, head) == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("My-skill", "must be lowercase"),
        ("-my-skill", "must not start or end with a hyphen"),
        ("my-skill-", "must not start or end with a hyphen"),
        ("my--skill", "must not contain consecutive hyphens"),
        ("my_skill", "contains '_'"),
        ("my skill", "contains ' '"),
        ("a" * 65, "is 65 characters; the limit is 64"),
        ("123", "must be a string, got a number"),
        ("''", "must not be empty"),
    ],
)
def test_name_rules(tmp_path: Path, make_skill: SkillFactory, name: str, expected: str) -> None:
    problems = problems_for(tmp_path, make_skill, f"name: {name}\ndescription: ok\n")
    assert any(expected in p for p in problems), problems


def test_name_must_equal_folder(tmp_path: Path, make_skill: SkillFactory) -> None:
    problems = problems_for(tmp_path, make_skill, "name: other\ndescription: ok\n")
    assert problems == ["'name' 'other' must equal the folder name 'my-skill'"]


def test_unicode_lowercase_letters_are_allowed(tmp_path: Path, make_skill: SkillFactory) -> None:
    for name in ("données-csv", "日本語", "наведение"):
        assert problems_for(tmp_path, make_skill, f"name: {name}\ndescription: ok\n", name) == []


def test_unicode_uppercase_rejected_and_nfkc_applied(
    tmp_path: Path, make_skill: SkillFactory
) -> None:
    assert any(
        "lowercase" in p
        for p in problems_for(tmp_path, make_skill, "name: Données\ndescription: ok\n", "Données")
    )
    # Full-width letters normalise (NFKC) to ASCII and then match the folder.
    assert problems_for(tmp_path, make_skill, "name: ｐｄｆ\ndescription: ok\n", "pdf") == []


def test_description_rules(tmp_path: Path, make_skill: SkillFactory) -> None:
    assert problems_for(tmp_path, make_skill, "name: my-skill\n") == [
        "missing required field 'description'"
    ]
    assert problems_for(tmp_path, make_skill, "name: my-skill\ndescription: ''\n") == [
        "'description' must not be empty"
    ]
    long = "x" * 1025
    assert problems_for(tmp_path, make_skill, f"name: my-skill\ndescription: {long}\n") == [
        "'description' is 1025 characters; the limit is 1024"
    ]
    assert (
        problems_for(tmp_path, make_skill, "name: my-skill\ndescription: " + "x" * 1024 + "\n")
        == []
    )


def test_optional_field_rules(tmp_path: Path, make_skill: SkillFactory) -> None:
    head = (
        "name: my-skill\ndescription: ok\ncompatibility: " + "c" * 501 + "\n"
        "metadata:\n  version: 1.0\nallowed-tools: 5\nlicense: [a]\n"
    )
    problems = problems_for(tmp_path, make_skill, head)
    assert "'compatibility' is 501 characters; the limit is 500" in problems
    assert "'metadata.version' must be a string, got a number (quote it in YAML)" in problems
    assert "'allowed-tools' must be a space-separated string, got a number" in problems
    assert "'license' must be a string, got a list" in problems
    assert len(problems) == 4


def test_extra_and_missing_fields_all_listed(tmp_path: Path, make_skill: SkillFactory) -> None:
    problems = problems_for(tmp_path, make_skill, "version: 2\ntags: [a]\n")
    assert problems[0].startswith("unexpected field 'tags'")
    assert problems[1].startswith("unexpected field 'version'")
    assert "missing required field 'name'" in problems
    assert "missing required field 'description'" in problems


def test_yaml_errors_are_one_line_with_location(tmp_path: Path, make_skill: SkillFactory) -> None:
    problems = problems_for(tmp_path, make_skill, "name: my-skill\ndescription: [unclosed\n")
    assert len(problems) == 1 and problems[0].startswith("frontmatter is not valid YAML")
    assert "line" in problems[0] and "\n" not in problems[0]
    dup = problems_for(tmp_path, make_skill, "name: my-skill\ndescription: a\nname: my-skill\n")
    assert dup == ["frontmatter is not valid YAML: duplicate key 'name' (line 4, column 1)"]


def test_missing_frontmatter_and_files(tmp_path: Path) -> None:
    assert validate_skill_dir(tmp_path / "nope") == ["path does not exist"]
    (tmp_path / "empty").mkdir()
    assert validate_skill_dir(tmp_path / "empty") == ["missing SKILL.md"]
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "SKILL.md").write_text("# no frontmatter\n")
    assert "must start with a '---' line" in validate_skill_dir(tmp_path / "plain")[0]
    (tmp_path / "open").mkdir()
    (tmp_path / "open" / "SKILL.md").write_text("---\nname: open\n")
    assert "not closed" in validate_skill_dir(tmp_path / "open")[0]
    (tmp_path / "list").mkdir()
    (tmp_path / "list" / "SKILL.md").write_text("---\n- a\n---\n")
    assert validate_skill_dir(tmp_path / "list") == [
        "frontmatter must be a YAML mapping of fields, got list"
    ]


def test_parse_frontmatter_splits_body() -> None:
    data, body = parse_frontmatter("\ufeff---\nname: a\ndescription: b\n---\n# Body\ntext\n")
    assert data == {"name": "a", "description": "b"}
    assert body == "# Body\ntext\n"
    with pytest.raises(SkillInvalid):
        parse_frontmatter("name: a\n")


def test_vendored_anthropic_skills_validate() -> None:
    folders = sorted(p for p in (FIXTURES / "anthropic").iterdir() if p.is_dir())
    assert [p.name for p in folders] == ["brand-guidelines", "frontend-design", "internal-comms"]
    for folder in folders:
        assert validate_skill_dir(folder) == [], folder
        assert (folder / "LICENSE.txt").is_file()
