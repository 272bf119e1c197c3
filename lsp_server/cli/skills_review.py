"""The review `kiln skills install` and `info` print, and the questions asked after it.

Everything in a review but the numbers comes from the publisher (or a hostile registry), so each
field is printed with control characters escaped, newlines included (docs/security.md 6c).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from skills_registry.client import printable
from skills_registry.install import Confirm


def print_summary(summary: dict[str, Any], *, err: bool = True) -> None:
    """The review summary: on stderr before a question, on stdout for `kiln skills info`.

    Everything in it but the numbers comes from the publisher (or a hostile registry), so each
    field is printed with control characters escaped, newlines included: an ANSI sequence in a
    description could hide the scripts line below it, a newline could forge one."""
    echo = lambda text="": click.echo(text, err=err)  # noqa: E731
    p = lambda value: printable(str(value), limit=2000)  # noqa: E731
    echo(f"{summary['id']}@{p(summary['version'])}  ({p(summary['status'])})")
    echo(f"  {p(summary['description'])}")
    if summary.get("status") in ("yanked", "deprecated"):
        echo(f"  {summary['status']}: {p(summary.get('statusReason') or 'no reason given')}")
    if summary.get("deprecated"):
        echo(f"  DEPRECATED: {p(summary['deprecated'])}")
    echo(
        f"  size: {summary['sizeBytes']} bytes, ~{summary['tokens']['total']} tokens "
        f"(SKILL.md ~{summary['tokens']['skillMd']})"
    )
    echo(f"  files: {len(summary['files'])}")
    for f in summary["files"][:40]:
        echo(f"    {f['size']:>9}  {p(f['path'])}")
    if len(summary["files"]) > 40:  # the rest is never left out without a word
        echo(
            f"    … and {len(summary['files']) - 40} more (kiln skills info {summary['id']} --json)"
        )
    echo(f"  scripts: {p(', '.join(summary['scripts'])) or 'none'}")
    echo(f"  allowed-tools: {p(summary['allowedTools'] or 'not set')}")
    findings = summary["findings"]
    echo(f"  scan findings: {len(findings) or 'none'}")
    for f in findings:
        where = f"{f['path']}:{f['line']}" if f["line"] else f["path"]
        echo(f"    [{f['severity']}] {f['rule']} {p(where)}: {p(f['message'])}")


def confirm_install(summary: dict[str, Any]) -> bool:
    print_summary(summary)
    if not sys.stdin.isatty():
        return False
    return click.confirm("Install this skill?", default=False, err=True)


def grant_question(scope: str) -> Confirm | None:
    """Grants are read only from the user's lockfile (a project's comes with the repository),
    so only a ``--user`` install asks for them."""
    return confirm_grant if scope == "user" else None


def confirm_grant(summary: dict[str, Any]) -> bool:
    """Ask once, with the list in view, whether the skill's allowed-tools are granted."""
    if not sys.stdin.isatty():
        return False
    return click.confirm(
        f"Let this skill use {printable(str(summary['allowedTools']))} without asking while it "
        "is active?",
        default=False,
        err=True,
    )
