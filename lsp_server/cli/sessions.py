"""`kiln sessions list|show|search`: the stored sessions of this machine (under KILN_HOME).

What they print from a session (its title, the task and the rest of the transcript, an excerpt)
is redacted as a CI run's outputs are, in every format: a key typed into a task was shown again
by `kiln sessions list` to whoever looked at the screen or the log (``agent.env_secrets``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lsp_server.cli.query_args import QueryCommand

if TYPE_CHECKING:
    from agent.session_store import SessionStore

F = TypeVar("F", bound=Callable[..., Any])


def _store() -> SessionStore:
    from agent.session_store import SessionStore

    return SessionStore(reading=True)


def _redacted() -> Callable[[Any], Any]:
    """Each string of a value with the environment's secrets and credential-shaped words out."""
    from agent.env_secrets import env_secrets, redact_all

    secrets = env_secrets()
    return lambda value: redact_all(value, secrets)


def _redacted_excerpts(store: SessionStore, hits: list[dict]) -> list[dict]:
    """``hits`` redacted. An excerpt is a window of words that may begin inside a token, past
    the ``ghp_`` that gives it its shape, or mark a match inside one (``[ghp]_…``): so each
    credential found in a hit's session is also taken out of its excerpt word by word."""
    from agent.env_secrets import env_secrets, found_in

    secrets = env_secrets()
    words: dict[str, set[str]] = {}
    for hit in hits:
        sid = hit["session_id"]
        if sid not in words:
            stored = json.dumps([hit["title"], store.messages(sid)], ensure_ascii=False)
            found = found_in(stored, secrets)
            words[sid] = {w for value in found for w in re.findall(r"[A-Za-z0-9]{6,}", value)}
        for word in sorted(words[sid], key=len, reverse=True):
            hit["excerpt"] = hit["excerpt"].replace(word, "[REDACTED]")
    return _redacted()(hits)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _line(text: object) -> str:
    """Stored text for one line of a listing: line breaks and tabs as spaces, other control
    characters escaped, so a transcript cannot forge a line a script reads (``--json`` keeps
    the text exact)."""
    from lsp_server.headless.terminal import safe

    return safe(" ".join(str(text).split()))


def _workspaces(root: Path | None, all_roots: bool) -> list[Path] | None:
    """The workspaces a listing covers: every one with ``--all``, the ``--root`` folder alone,
    else every workspace holding the current folder (`kiln run` from a subfolder works in the
    repository root, and a workspace opened on the subfolder holds it too)."""
    if all_roots:
        return None
    if root is not None:
        return [root.resolve()]
    here = Path.cwd().resolve()
    return [here, *here.parents]


@click.group("sessions")
def sessions_group() -> None:
    """List, show and search past sessions."""


def _listing(flag: str, most: int, default: int, rows: str) -> Callable[[F], F]:
    """The options `list` and `search` share: --root, --all, how many (FLAG) and --json."""
    options = [
        click.option(
            "--root",
            type=click.Path(file_okay=False, path_type=Path),
            help="Only sessions of this workspace.",
        ),
        click.option("--all", "all_roots", is_flag=True, help="Sessions of every workspace."),
        click.option(
            flag,
            "limit",
            type=click.IntRange(1, most),
            default=default,
            show_default=True,
            help=f"Most {rows} to print.",
        ),  # fmt: skip
        click.option("--json", "as_json", is_flag=True, help=f"Print the {rows} as a JSON list."),
    ]

    def apply(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


@sessions_group.command("list")
@_listing("-n", 1000, 20, "sessions")
def list_cmd(root: Path | None, all_roots: bool, limit: int, as_json: bool) -> None:
    """Sessions, newest first: of the workspaces holding the current folder, unless --root or
    --all."""
    from agent.session_claim import turn_running

    store = _store()
    rows = store.recent(_workspaces(root, all_roots), limit)
    for row in rows:  # the store says how the last turn ended; a running one holds its claim
        if turn_running(store, row["id"]):
            row["status"] = "running"
    rows = _redacted()(rows)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no sessions" + ("" if all_roots else " in this workspace (try --all)"))
        return
    for row in rows:
        model, title = _line(row["model"]), _line(row["title"])
        running = "  (running)" if row["status"] == "running" else ""
        click.echo(f"{row['id']}  {_when(row['updated'])}  {model:<20.20}  {title[:60]}{running}")


@sessions_group.command("show")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="The stored messages as JSON.")
def show_cmd(session_id: str, as_json: bool) -> None:
    """The transcript of a session (SESSION_ID: the id, or a unique start of it)."""
    store = _store()
    session_id = store.resolve(session_id)
    redacted = _redacted()
    info = redacted(store.get(session_id))
    messages = redacted(store.messages(session_id))
    usage = store.usage(session_id)
    if as_json:
        click.echo(
            json.dumps(
                {"session": info, "messages": messages, "usage": usage},
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    click.echo(
        f"session {info['id']}  root {info['root']}  model {info['model']}  mode {info['mode']}"
    )
    for message in messages:
        for block in message["content"]:
            kind = block.get("type")
            if kind == "text":
                label = "user" if message["role"] == "user" else "assistant"
                click.echo(f"\n[{label}] {block['text']}")
            elif kind == "tool_use":
                click.echo(
                    f"\n[tool call] {block['name']} {json.dumps(block['input'], ensure_ascii=False)[:300]}"
                )
            elif kind == "tool_result":
                status = "error" if block.get("is_error") else "ok"
                content = str(block.get("content", ""))
                click.echo(f"[tool result: {status}] {content[:500]}")
    tokens = {
        k: sum(u[k] for u in usage)
        for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    }
    click.echo(
        f"\ntokens in {tokens['input_tokens']} (cache read {tokens['cache_read_tokens']}, "
        f"cache write {tokens['cache_write_tokens']}), out {tokens['output_tokens']}; "
        f"cost ${sum(u['cost_usd'] for u in usage):.4f}"
    )


@sessions_group.command("search", cls=QueryCommand)
@click.argument("query")
@_listing("-k", 100, 10, "hits")
def search_cmd(query: str, root: Path | None, all_roots: bool, limit: int, as_json: bool) -> None:
    """Find earlier sessions by what was discussed, changed or decided (in the workspaces
    holding the current folder, unless --root or --all).

    QUERY may start with a dash; any of its words may match."""
    from agent.session_search import query_words

    if not query.strip():
        raise click.UsageError("the query is empty")
    hits: list[dict] = []
    if query_words(query):
        store = _store()
        hits = _redacted_excerpts(store, store.search(query, _workspaces(root, all_roots), limit))
    else:
        click.echo("kiln: the query has no searchable words", err=True)
    if as_json:
        click.echo(json.dumps(hits, indent=2, ensure_ascii=False))
        return
    if not hits:
        click.echo("no matching sessions")
        return
    for hit in hits:
        click.echo(
            f"{hit['session_id']}  {_when(hit['created'])}  [{_line(hit['kind'])}] "
            f"{_line(hit['excerpt'])}"
        )
