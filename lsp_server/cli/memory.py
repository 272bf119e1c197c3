"""`kiln memory show|add|edit|path`: the memory files a session in this workspace starts with."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lsp_server.cli.options import root_option

if TYPE_CHECKING:
    from agent.memory import Memory


def _memory(root: Path) -> Memory:
    from agent.memory import Memory
    from agent.session_store import kiln_home

    return Memory(root.resolve(), kiln_home())


_user_option = click.option(
    "--user", "user_level", is_flag=True, help="The user-level file under KILN_HOME."
)


@click.group("memory")
def memory_group() -> None:
    """Show and edit KILN.md / AGENTS.md / CLAUDE.md memory."""


@memory_group.command("show")
@root_option
def show_cmd(root: Path) -> None:
    """The memory blocks a new session here starts with (user, then project), imports expanded."""
    blocks = _memory(root).initial_blocks()
    click.echo(
        "\n\n".join(blocks)
        if blocks
        else "no memory files (create one with `kiln memory add TEXT`)"
    )


@memory_group.command("path")
@root_option
@_user_option
def path_cmd(root: Path, user_level: bool) -> None:
    """The file `add` writes to."""
    memory = _memory(root)
    click.echo(str(memory.user_file() if user_level else memory.project_file()))


@memory_group.command("add")
@click.argument("text")
@root_option
@_user_option
def add_cmd(text: str, root: Path, user_level: bool) -> None:
    """Append TEXT as one bullet."""
    if not text.strip():
        raise click.UsageError("the text is empty")
    memory = _memory(root)
    target = memory.user_file() if user_level else memory.project_file()
    click.echo(f"added to {memory.append(text, target)}")


@memory_group.command("edit")
@root_option
@_user_option
def edit_cmd(root: Path, user_level: bool) -> None:
    """Open the memory file in $VISUAL / $EDITOR."""
    name = "VISUAL" if os.environ.get("VISUAL") else "EDITOR"
    editor = os.environ.get(name) or "vi"
    try:
        command = shlex.split(editor)
    except ValueError as exc:  # an unbalanced quote: say so before any file is made
        raise click.UsageError(f"${name} is not a command line ({exc}): {editor!r}") from None
    memory = _memory(root)
    target = memory.user_file() if user_level else memory.project_file()
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("# Memory\n\n", encoding="utf-8")
    try:
        code = subprocess.call([*command, str(target)])
    except OSError as exc:
        raise click.ClickException(
            f"cannot start the editor {editor!r}: {exc.strerror}; set VISUAL or EDITOR"
        ) from None
    if code != 0:
        raise click.ClickException(f"the editor exited with {code}")
