"""`kiln memory show|add|edit|path`: the memory files a session in this workspace starts with."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lsp_server.cli.options import root_option
from lsp_server.cli.query_args import QueryCommand

if TYPE_CHECKING:
    from agent.memory import Memory


def _memory(root: Path) -> Memory:
    """The memory a session here reads, the user's read deny rules applied as a session does."""
    from agent.errors import KilnError
    from agent.memory import Memory
    from agent.permission_rules import load_rules
    from agent.permissions import Permissions
    from agent.session_store import kiln_home

    root = root.resolve()
    try:
        rules = Permissions("ask", load_rules(root, kiln_home()), root=root)
    except KilnError as exc:
        raise click.ClickException(f"{exc} ({exc.hint})" if exc.hint else str(exc)) from None
    return Memory(root, kiln_home(), denied=rules.read_denied)


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


class NoteCommand(QueryCommand):
    """TEXT may start with a dash when it reads as text ("- use tabs"); a lone "-x" is still
    an option, refused when unknown, so a mistyped one is not written down as a note."""

    spaced_text_only = True


BULLET = re.compile(r"^[-*+](\s+|$)")


@memory_group.command("add", cls=NoteCommand)
@click.argument("text")
@root_option
@_user_option
def add_cmd(text: str, root: Path, user_level: bool) -> None:
    """Append TEXT as one bullet (TEXT may be written as one: "- use tabs")."""
    text = BULLET.sub("", text.strip())
    if not text:
        raise click.UsageError("the text is empty")
    memory = _memory(root)
    target = memory.user_file() if user_level else memory.project_file()
    click.echo(f"added to {memory.append(text, target)}")


@memory_group.command("edit")
@root_option
@_user_option
def edit_cmd(root: Path, user_level: bool) -> None:
    """Open the memory file in $VISUAL / $EDITOR.

    The editor gets a copy, saved back only when it exits with 0 and the text changed: a
    missing or failing editor leaves no file behind, and a line `remember` or `kiln memory add`
    appended meanwhile is kept after the edit instead of overwritten. Ctrl-C belongs to the
    editor until it exits (vi cancels a command with it), as with git."""
    from agent.errors import KilnError

    name, command = _editor_command()
    memory = _memory(root)
    target = memory.user_file() if user_level else memory.project_file()
    try:
        _, shown = memory.read_for_edit(target)
    except KilnError as exc:
        raise click.ClickException(f"{exc} ({exc.hint})" if exc.hint else str(exc)) from None
    folder = Path(tempfile.mkdtemp(prefix="kiln-memory-"))
    copy = folder / target.name  # the same name, so the editor knows it is Markdown
    copy.write_bytes(shown)
    try:
        code = _wait_for_editor([*command, str(copy)])
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise click.ClickException(
            f"cannot start the editor {command[0]!r} (${name}): {exc.strerror}; "
            "set VISUAL or EDITOR to an editor command"
        ) from None
    edited = copy.read_bytes()
    if code != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise click.ClickException(f"the editor exited with {code}; {target} is unchanged")
    if edited == shown:
        shutil.rmtree(folder, ignore_errors=True)
        return
    try:
        saved = memory.save_edit(target, shown, edited)
    except KilnError as exc:
        raise click.ClickException(f"{exc}; your text is in {copy}") from None
    if not saved:
        raise click.ClickException(
            f"{target} changed while you edited it; nothing was written, your text is in {copy}"
        )
    shutil.rmtree(folder, ignore_errors=True)
    click.echo(f"saved {target}")


def _wait_for_editor(argv: list[str]) -> int:
    """Run the editor to its end. Ctrl-C reaches every process of the terminal's foreground
    group, and an editor takes it (vi cancels a command with it): Kiln ignores it meanwhile, as
    git does, instead of leaving with the editor still open on a copy never saved back."""
    ignored = (signal.SIGINT, signal.SIGQUIT)
    previous = [signal.signal(sig, signal.SIG_IGN) for sig in ignored]

    def as_before() -> None:  # the editor gets Ctrl-C as Kiln got it (exec resets a handler)
        for sig, handler in zip(ignored, previous, strict=True):
            if handler != signal.SIG_IGN:
                signal.signal(sig, signal.SIG_DFL)

    try:
        return subprocess.call(argv, preexec_fn=as_before)
    finally:
        for sig, handler in zip(ignored, previous, strict=True):
            signal.signal(sig, handler)


def _editor_command() -> tuple[str, list[str]]:
    """$VISUAL, else $EDITOR, else vi, as an argument list. A blank setting counts as unset
    (an empty command would run the memory file itself); a value that names an existing file is
    that file, spaces and all; anything else is split like a shell would."""
    name = "VISUAL" if os.environ.get("VISUAL", "").strip() else "EDITOR"
    editor = os.environ.get(name, "").strip() or "vi"
    whole = os.path.expanduser(editor)
    if os.path.isfile(whole):
        return name, [whole]
    try:
        command = shlex.split(editor)
    except ValueError as exc:  # an unbalanced quote: say so before any file is made
        raise click.UsageError(f"${name} is not a command line ({exc}): {editor!r}") from None
    return name, [os.path.expanduser(command[0]), *command[1:]]
