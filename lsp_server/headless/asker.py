"""The permission question of a `kiln run` in a terminal: the command or diff shown escaped,
asked in a thread so Ctrl-C still reaches the run."""

from __future__ import annotations

import asyncio
import difflib
import sys
import threading
from typing import Any

import click

from agent.protocols import PermissionRequest
from lsp_server.headless.terminal import safe, title_line


def asker(assume_yes: bool, unattended: bool) -> Any:
    """The permission question for a terminal; None (refuse) when nobody is there to ask."""
    if assume_yes:
        return lambda request: "allow_once"
    if unattended or not sys.stdin.isatty():
        return None  # nobody to ask: refuse

    async def ask(request: PermissionRequest) -> str:
        # The question blocks on the terminal, so it runs in a daemon thread: Ctrl-C still
        # reaches the event loop (and cancels the turn), and exit never waits for an answer.
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bool] = loop.create_future()
        # the question carries the model's command and the repository's text: escaped
        why = f" ({safe(request.reason)})" if request.reason else ""
        shown = safe(approval_text(request))

        def settle(ok: bool) -> None:
            if not answer.done():
                answer.set_result(ok)

        def question() -> None:
            try:
                if shown:
                    click.echo(shown, err=True)
                title = title_line(request.title)
                ok = click.confirm(f"Allow {title}{why}?", default=False, err=True)
            except (click.Abort, EOFError, KeyboardInterrupt):
                ok = False
            loop.call_soon_threadsafe(settle, ok)

        threading.Thread(target=question, daemon=True, name="kiln-ask").start()
        return "allow_once" if await answer else "reject_once"

    return ask


def approval_text(request: PermissionRequest) -> str:
    """What the user is asked to approve: the diff of an edit, the command and its parts, the
    memory text; marked when untrusted content came before it."""
    lines = []
    if request.from_external:
        lines.append(
            "! requested after reading content from outside your trust "
            "(files, command output, web, MCP, third-party skills)"
        )
    if request.edit is not None:
        e = request.edit
        lines += difflib.unified_diff(
            e.old_text.splitlines(),
            e.new_text.splitlines(),
            f"a/{e.path}",
            f"b/{e.path}",
            lineterm="",
        )
    elif request.detail:
        lines.append(request.detail)
    return "\n".join(lines)
