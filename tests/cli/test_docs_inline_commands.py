"""The `kiln …` commands the user docs name in running text exist as written: every
sub-command (`kiln skills search|info|install`, `kiln registry token list`) is one the CLI
has, and every `--option` is one that command takes. test_docs_options.py checks the shell
examples against `--help`; this covers the inline spans a reader copies from a sentence, and
the READMEs outside docs/."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from lsp_server.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "agent/README.md",
    ROOT / "extensions/vscode/README.md",
]


def spans() -> list[tuple[str, str]]:
    """(doc, span) for each inline `kiln …` code span; a span may wrap onto the next line."""
    found = []
    for doc in DOCS:
        text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
        for span in re.findall(r"(?<!`)`(kiln [^`]+)`", text):
            found.append((str(doc.relative_to(ROOT)), " ".join(span.split())))
    return sorted(set(found))


def problems(span: str) -> list[str]:
    """What in `span` the CLI does not have, walking groups word by word."""
    words = re.sub(r"[\[\]{}]", " ", span.replace("\\|", "|")).split()[1:]
    command: click.Command = cli
    ctx = click.Context(cli)
    out = []
    for i, word in enumerate(words):
        if word.startswith("-") or not isinstance(command, click.Group):
            break
        names = [n for n in word.split("|") if n != "…"]  # `search|info|…`
        if not all(re.fullmatch(r"[a-z][a-z-]*", n) for n in names):
            break  # an argument (a path, a task, `…`), not a sub-command
        missing = [n for n in names if command.get_command(ctx, n) is None]
        if missing:
            out.append(f"`kiln {' '.join(words[:i])}` has no sub-command {', '.join(missing)}")
            break
        if len(names) > 1:
            break  # alternatives: each exists; options after them belong to all
        command = command.get_command(ctx, names[0]) or command
    params = {o: p for p in command.params for o in (*p.opts, *p.secondary_opts)}
    for word, value in zip(words, [*words[1:], ""], strict=True):
        option = word.split("=")[0].rstrip(",.;:")
        if not re.fullmatch(r"--[a-z][a-z0-9-]*", option):
            continue
        if option not in params:
            out.append(f"`kiln … {command.name}` has no option {option}")
            continue
        # `--mode ask|auto-edit|ci|yolo`: every value shown is one the option accepts
        choices = getattr(params[option].type, "choices", None)
        if choices and "|" in value:
            wrong = [v for v in value.split("|") if v and v != "…" and v not in choices]
            if wrong:
                out.append(f"`kiln … {command.name} {option}` takes no {', '.join(wrong)}")
    return out


SPANS = spans()


def test_the_docs_name_commands_in_running_text() -> None:
    assert len(SPANS) > 40
    assert any("registry token list" in s for _, s in SPANS)


@pytest.mark.parametrize("doc,span", SPANS, ids=[f"{d}:{s[:60]}" for d, s in SPANS])
def test_an_inline_command_is_one_the_cli_has(doc: str, span: str) -> None:
    assert not problems(span), f"{doc}: `{span}`: {problems(span)}"


def test_the_checker_catches_a_wrong_option_and_a_wrong_sub_command() -> None:
    assert problems("kiln registry token list --namespace NS --json") == []
    assert problems("kiln skills search|info|install") == []
    assert problems("kiln memory show\\|add\\|…") == []
    assert problems("kiln memory show\\|list") != []
    assert problems("kiln registry token list --label X") != []
    assert problems("kiln skills search|inspect") != []
    assert problems("kiln registry serve --metadata-ttl 60") == []
    assert problems("kiln registry serve --ttl 60") != []
    assert problems("kiln run --mode ask\\|auto-edit\\|ci\\|yolo") == []
    assert problems("kiln run --mode ask|plan") != []


def test_the_readme_table_shows_values_the_options_take() -> None:
    """`--mode ask\\|auto-edit\\|ci\\|yolo` in a row of README's command table."""
    table = (ROOT / "README.md").read_text().split("## What is in the box")[1].split("\n\n")[1]
    checked = 0
    for row in table.splitlines()[2:]:
        command = re.match(r"\| `(kiln [a-z-]+)", row)
        for option in re.findall(r"`(--[a-z-]+ [^`]*\|[^`]*)`", row) if command else []:
            assert not problems(f"{command[1]} {option}"), (row, problems(f"{command[1]} {option}"))
            checked += 1
    assert checked >= 2
