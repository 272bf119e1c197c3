"""What a new user meets first: `kiln --help` and the `--help` of every command under it, read
from the real `kiln`. Every command and every option says in a few words what it is for."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.e2e]

TOP = ["acp", "context", "index", "lsp", "mcp", "memory", "registry", "run", "search",
       "sessions", "skills"]  # fmt: skip


def help_of(command: list[str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *command, "--help"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, (command, proc.stderr)
    return proc.stdout


def section(text: str, title: str) -> list[str]:
    """The lines of one section of click's help (``Options:``, ``Commands:``)."""
    if f"\n{title}:\n" not in text:
        return []
    body = text.split(f"\n{title}:\n", 1)[1]
    return re.split(r"\n(?=\S)", body, maxsplit=1)[0].splitlines()


def silent_entries(lines: list[str]) -> list[str]:
    """Entries (an option, or a sub-command) printed with no text beside or below them."""
    silent = []
    for i, line in enumerate(lines):
        entry = line[2:]
        if not line.startswith("  ") or entry.startswith(" "):
            continue  # a continuation line
        beside = entry.strip().split("  ", 1)[1].strip() if "  " in entry.strip() else ""
        below = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1][:3] == "   " else ""
        text = beside or below  # `[default: warning]` alone is no word on what it does
        if not text or text.startswith("["):
            silent.append(entry.strip().split("  ", 1)[0])
    return silent


@pytest.mark.parametrize("top", TOP)
def test_every_command_and_option_has_a_line_of_help(top: str) -> None:
    """`kiln sessions list --help` showed `-n INTEGER RANGE` and `--json` with no word on what
    they do, `kiln registry trusted-publisher --help` three sub-commands with none;
    `kiln run --output-format` and `kiln registry serve --log-level` only their defaults.
    `kiln lsp --log-level [debug|info|warning|error]` showed `[default: WARNING]`: a default is
    spelled as one of the choices beside it."""
    missing, todo = [], [[top]]
    while todo:
        command = todo.pop()
        text = help_of(command)
        missing += [
            f"kiln {' '.join(command)} {e}" for e in silent_entries(section(text, "Options"))
        ]
        missing += [
            f"kiln {' '.join(command)}: default not among the choices: {e}"
            for e in _entries(section(text, "Options"))
            if not _default_among_choices(e)
        ]
        commands = section(text, "Commands")
        missing += [f"kiln {' '.join(command)} {e} (command)" for e in silent_entries(commands)]
        todo += [[*command, line.split()[0]] for line in commands if line[2:3].strip()]
    assert not missing, "\n".join(missing)


def _entries(lines: list[str]) -> list[str]:
    """Each option of a help section as one line (its continuation lines joined)."""
    entries: list[str] = []
    for line in lines:
        if line.startswith("  ") and not line[2:].startswith(" "):
            entries.append(line.strip())
        elif entries:
            entries[-1] += " " + line.strip()
    return entries


def _default_among_choices(entry: str) -> bool:
    choices = re.match(r"\S+(?:, \S+)? \[([^\]\s]+\|[^\]\s]+)\]", entry)
    default = re.search(r"\[default: ([^\]]+)\]", entry)
    return not (choices and default) or default.group(1) in choices.group(1).split("|")


def test_run_help_names_the_root_a_run_in_a_subfolder_works_at() -> None:
    """`kiln run --help` said `--root … [default: .]` while a run started in a subfolder of a
    repository works at the repository's root (README, docs/ci.md): the help now says so."""
    text = help_of(["run"])
    root_help = text.split("--root", 1)[1].split("\n  -", 1)[0]
    assert "[default: .]" not in root_help
    assert "repository" in root_help, root_help


def test_lsp_log_level_takes_the_shown_names_and_capitals() -> None:
    def parsed(level: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # a bad --tcp stops it once the options are read
            [sys.executable, "-m", "lsp_server", "lsp", "--log-level", level, "--tcp", "x"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    for level in ("debug", "WARNING", "Error"):
        assert "--tcp expects HOST:PORT" in parsed(level).stderr, level
    refused = parsed("loud").stderr
    assert "'loud' is not one of 'debug', 'info', 'warning', 'error'" in refused, refused


def test_options_read_from_a_variable_name_it_when_refused() -> None:
    """`KILN_REGISTRY_VERSIONS_PER_SKILL=abc` was refused as "Invalid value for
    '--versions-per-skill'": every option that also reads a variable and checks its value
    refuses a bad one under the variable's name (``EnvNamedOption``)."""
    import click

    from lsp_server.cli import cli
    from lsp_server.cli.options import EnvNamedOption

    ctx = click.Context(cli)
    todo: list[tuple[str, click.Command]] = [("kiln", cli)]
    checked, plain = [], []
    while todo:
        name, command = todo.pop()
        if isinstance(command, click.Group):
            for sub_name in command.list_commands(ctx):
                sub = command.get_command(ctx, sub_name)
                todo += [(f"{name} {sub_name}", sub)] if sub is not None else []
            continue
        for param in command.params:
            if isinstance(param, click.Option) and param.envvar and param.type != click.STRING:
                checked.append(f"{name} {param.opts[0]}")
                if not isinstance(param, EnvNamedOption):
                    plain.append(f"{name} {param.opts[0]} ({param.envvar})")
    assert "kiln registry serve --versions-per-skill" in checked
    assert not plain, plain
