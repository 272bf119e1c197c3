"""``kiln skills validate`` and ``kiln skills list``: the commands that need no registry.

They live apart from the registry commands so authors can check a skill offline; the
``kiln skills`` group adds them with ``add_command``. Validation prints every problem, one per
line as ``PATH: problem``, and exits 1 when anything is wrong (0 when all are valid).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from skills_registry.discovery import discover_skills
from skills_registry.errors import SkillsError
from skills_registry.spec import SKILL_FILE, validate_skill_dir


def _targets(path: Path) -> list[Path]:
    """A skill folder, a SKILL.md, or a folder of skill folders (each checked)."""
    if path.is_file() and path.name == SKILL_FILE:
        return [path.parent]
    if path.is_dir() and not (path / SKILL_FILE).exists():
        children = sorted(p for p in path.iterdir() if p.is_dir() and (p / SKILL_FILE).is_file())
        if children:
            return children
    return [path]


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print {path: [problems]} as JSON.")
def validate_cmd(paths: tuple[Path, ...], as_json: bool) -> None:
    """Check skill folders against the Agent Skills spec (agentskills.io)."""
    report: dict[str, list[str]] = {}
    for given in paths:
        for target in _targets(given):
            report[str(target)] = validate_skill_dir(target)
    bad = {p: problems for p, problems in report.items() if problems}
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        for path, problems in report.items():
            if not problems:
                click.echo(f"{path}: valid")
            for problem in problems:
                click.echo(f"{path}: {problem}")
    if bad:
        # The CLI root turns this into one stderr line and exit status 1.
        count = sum(len(p) for p in bad.values())
        raise SkillsError(f"{count} problem(s) in {len(bad)} of {len(report)} skill(s)")


@click.command("list")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Project root whose .kiln/.agents/.claude skills are included.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def list_cmd(root: Path, as_json: bool) -> None:
    """List the skills the agent would see here; on a name clash the user's skill is used."""
    catalog = discover_skills(root)
    rows: list[dict[str, Any]] = [
        {
            "name": s.name,
            "scope": s.scope,
            "third_party": s.third_party,
            "path": str(s.path),
            "description": s.description,
            "allowed_tools": s.allowed_tools,
        }
        for s in sorted(catalog.skills.values(), key=lambda s: s.name)
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    elif not rows:
        click.echo(
            "no skills found (looked in .kiln/skills, .agents/skills, .claude/skills, "
            "$KILN_HOME/skills, ~/.agents/skills)"
        )
    else:
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            tag = "third-party" if r["third_party"] else r["scope"]
            desc = r["description"] if len(r["description"]) <= 80 else r["description"][:79] + "…"
            click.echo(f"{r['name']:<{width}}  {tag:<11}  {desc}")
    for warning in catalog.warnings:
        click.echo(f"warning: {warning}", err=True)
