"""The options the user documentation shows are the options the commands take: every
`--option` of a `kiln …` command in README.md's command table and in the shell examples of
docs/*.md appears in that command's `--help`, and the install commands the docs give can work
(Kiln is installed from a checkout; there is no `kiln-agent` to fetch from an index)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GROUPS = {"skills", "registry", "memory", "sessions", "context", "mcp"}


@cache
def help_text(command: tuple[str, ...]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *command, "--help"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, (command, proc.stderr)
    return proc.stdout


def command_of(words: list[str]) -> tuple[str, ...]:
    """`kiln skills install X --yes` -> ("skills", "install"); `kiln run --ci …` -> ("run",)."""
    if len(words) > 1 and words[0] in GROUPS and not words[1].startswith("-"):
        if words[0] == "registry" and words[1] == "token" and words[2:3] in (["list"], ["revoke"]):
            return ("registry", "token")
        return (words[0], words[1])
    return (words[0],)


def documented_uses() -> list[tuple[str, tuple[str, ...], str]]:
    """(doc, command, option) for each `--option` on a `kiln` line of a shell example."""
    uses = []
    for doc in DOCS:
        text = doc.read_text()
        blocks = re.findall(r"```(?:sh|bash)\n(.*?)```", text, re.S)
        lines = [ln for b in blocks for ln in b.replace("\\\n", " ").splitlines()]
        for line in lines:
            for part in re.split(r"&&|\||;|\$\(", line.split(" #")[0]):
                try:
                    words = shlex.split(part.replace(")", " "))
                except ValueError:
                    continue
                words = [w for w in words if "=" not in w or w.startswith("-")]
                if "kiln" not in words:
                    continue
                words = words[words.index("kiln") + 1 :]
                if not words or words[0].startswith("-"):
                    continue
                command = command_of(words)
                for w in words:
                    if w.startswith("--") and len(w) > 2:
                        uses.append((doc.name, command, w.split("=")[0]))
    return uses


USES = sorted(set(documented_uses()))


@pytest.mark.parametrize(
    "doc,command,option", USES, ids=[f"{d}:{' '.join(c)} {o}" for d, c, o in USES]
)
def test_a_documented_option_is_in_the_help(
    doc: str, command: tuple[str, ...], option: str
) -> None:
    assert re.search(rf"(^|[\s,]){re.escape(option)}\b", help_text(command), re.M), (
        f"{doc} shows `kiln {' '.join(command)} … {option}`, which `--help` does not list"
    )


def test_the_readme_table_names_real_options() -> None:
    table = ROOT.joinpath("README.md").read_text().split("## What is in the box")[1]
    table = table.split("\n\n")[1]
    for row in table.splitlines()[2:]:
        cell = row.split("|")[1]
        words = re.findall(r"`kiln ([a-z-]+)(?: ([a-z-]+))?", cell)
        sub = words[0][0]
        for option in re.findall(r"(--[a-z][a-z-]*)", row):
            assert option in help_text((sub,)), f"README: `kiln {sub}` has no {option}"


def test_install_commands_install_from_a_checkout() -> None:
    for doc in [*DOCS, ROOT / "extensions/vscode/README.md", ROOT / "extensions/nvim/doc/kiln.txt"]:
        for line in doc.read_text().splitlines():
            # `pip install 'kiln-agent[extra]'` adds an extra to an installed Kiln; a bare
            # `pip install kiln-agent` would look for Kiln itself on the index.
            assert not re.search(r"pip install kiln-agent\b(?!\[)", line), f"{doc.name}: {line}"
