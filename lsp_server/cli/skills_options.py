"""What the `kiln skills` commands share: the scope they work in (``--project``, the default,
or ``--user``; ``--root``) and how they say they wait for another install of the same scope."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from skills_registry.install import Scope


def scope_options(fn: Any) -> Any:
    fn = click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Project root (default: current folder).",
    )(fn)
    fn = click.option("--user", "scope", flag_value="user", help="Use $KILN_HOME/skills.")(fn)
    fn = click.option(
        "--project",
        "scope",
        flag_value="project",
        default=True,
        help="Use <project>/.kiln/skills (default).",
    )(fn)
    return fn


def skill_scope(scope: str, root: Path | None) -> Scope:
    return Scope.user() if scope == "user" else Scope.project(root or Path.cwd())


def say_waiting(message: str) -> None:
    click.echo(f"kiln: {message}", err=True)
