"""The CLI the design names (scripts and editors call these): every command, subcommand and
option exists in the real `kiln`'s `--help`, and misuse of them is one line and exit code 2.
Behaviour of each command is held by its own tests (tests/indexer/test_cli.py for index/search,
tests/cli/*, tests/registry/*, tests/providers/test_kiln_run_wire.py for run)."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache

import pytest

pytestmark = [pytest.mark.e2e]

# command -> options (or subcommands, for a group) the design names
DESIGN_CLI: dict[tuple[str, ...], tuple[str, ...]] = {
    ("index",): ("PATH", "--watch", "--json"),
    ("search",): ("QUERY", "--root", "-k", "--json"),
    ("run",): ("TASK", "--root", "--output-format", "--max-steps"),
    ("lsp",): ("--tcp",),
    ("acp",): (),
    ("skills",): ("search", "info", "install", "remove", "update", "outdated", "list", "verify",
                  "publish", "trust"),
    ("skills", "trust"): ("URL", "--key"),
    ("registry",): ("serve", "token", "marketplace", "migrate"),
    ("registry", "serve"): ("--host", "--port", "--data", "--db", "--blobs", "--signing-key"),
    ("memory",): ("show", "add", "path"),
    ("sessions",): ("list", "show", "search"),
    ("context",): ("show",),
    ("context", "show"): ("SESSION",),
}  # fmt: skip


@cache
def kiln(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.parametrize("command", list(DESIGN_CLI), ids=" ".join)
def test_every_design_command_and_option_exists(command: tuple[str, ...]) -> None:
    proc = kiln(*command, "--help")
    assert proc.returncode == 0, proc.stderr
    usage = proc.stdout.split("\n", 1)[0]
    assert usage.startswith(f"Usage: kiln {' '.join(command)} "), usage
    for name in DESIGN_CLI[command]:
        if name.isupper():  # an argument: named in the usage line
            assert re.search(rf"\[?{name}\]?", usage), (command, name, usage)
        elif name.startswith("-"):
            assert re.search(rf"^\s+(-\w, )?{re.escape(name)}\b", proc.stdout, re.M), name
        else:  # a subcommand, listed under Commands:
            commands = proc.stdout.split("Commands:", 1)[1]
            assert re.search(rf"^\s+{name}\b", commands, re.M), (command, name)


def test_the_top_level_lists_every_design_command() -> None:
    proc = kiln("--help")
    commands = proc.stdout.split("Commands:", 1)[1]
    listed = set(re.findall(r"^\s{2}(\w+)", commands, re.M))
    assert {c[0] for c in DESIGN_CLI} <= listed


@pytest.mark.parametrize(
    "args",
    [
        ("lsp", "--tcp", "nonsense"),
        ("lsp", "--tcp", "127.0.0.1:99999"),
        ("run", "x", "--output-format", "xml"),
        ("run", "x", "--max-steps", "0"),
        ("search", "x", "-k", "0"),
        ("context", "show", "no-such-session"),
        ("sessions", "show", "no-such-session"),
        ("skills", "trust", "not-a-url", "--key", "AAAA"),
        ("memory", "add"),
        ("acp", "--bogus"),
    ],
    ids=" ".join,
)
def test_misuse_is_one_line_and_exit_2(args: tuple[str, ...]) -> None:
    proc = kiln(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_one_distribution_with_the_kiln_console_script() -> None:
    """pyproject declares the `kiln` script as the CLI that `python -m lsp_server` runs, and the
    installed `kiln` on PATH answers as that CLI."""
    import shutil
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"] == {"kiln": "lsp_server.cli:main"}
    main_source = (root / "lsp_server" / "__main__.py").read_text(encoding="utf-8")
    assert "from lsp_server.cli import main" in main_source
    script = shutil.which("kiln")
    assert script is not None, "the `kiln` script is not installed (pip install -e .)"
    proc = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == kiln("--help").stdout
