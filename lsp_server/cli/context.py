"""`kiln context show|diff`: what a turn actually sent the model, and why the cache broke.

Both commands read the session store only (no model, no network). SESSION defaults to the
most recent session of the current directory (or of ``--root``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

PREVIEW = 300


def _store() -> Any:
    from agent.session_store import SessionStore

    return SessionStore(reading=True)


def _resolve(store: Any, session: str | None, root: Path | None) -> str:
    from agent.errors import UsageError

    if session is not None:  # "" too: an unset $SID must not mean the latest session
        return str(store.resolve(session))  # the id, or a unique start of it
    where = (root or Path.cwd()).resolve()
    # from a subfolder, the workspace is the nearest parent that has sessions
    for folder in [where, *where.parents] if root is None else [where]:
        latest = store.recent(folder, limit=1)
        if latest:
            return str(latest[0]["id"])
    raise UsageError(
        f"no sessions for {where}", hint="pass a SESSION id (see `kiln sessions list`) or --root"
    )


def _one_of(turn: int | None, step: int | None) -> None:
    if turn is not None and step is not None:
        raise click.UsageError("give --turn or --step, not both")


def _window(store: Any, session_id: str) -> int:
    from agent.context_report import DEFAULT_WINDOW

    return int(store.get(session_id)["state"].get("context_window") or DEFAULT_WINDOW)


def _root_option(what: str) -> Any:
    return click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help=f"Workspace whose latest session to {what} (default: the current folder, or the "
        "nearest folder above it that has sessions, as a run in a repository's subfolder "
        "works at its root).",
    )


@click.group(name="context")
def context_group() -> None:
    """Inspect the context a session sent to the model."""


@context_group.command("show")
@click.argument("session", required=False)
@click.option("--turn", type=int, default=None, help="Turn number (its last request).")
@click.option("--step", type=int, default=None, help="Exact request (step) number.")
@_root_option("show")
@click.option("--json", "as_json", is_flag=True, help="Print the request and report as JSON.")
@click.option("--full", is_flag=True, help="Print every block in full (text output).")
def show_cmd(
    session: str | None,
    turn: int | None,
    step: int | None,
    root: Path | None,
    as_json: bool,
    full: bool,
) -> None:
    """The exact request of a turn, its budget by component and the session's cache share."""
    from agent import context_report as cr

    _one_of(turn, step)
    store = _store()
    sid = _resolve(store, session, root)
    chosen = cr.select_step(store, sid, turn=turn, step=step)
    view = cr.request_at(store, sid, chosen)
    report = cr.budget(view, _window(store, sid))
    report.cache = cr.cache_share(store, sid)
    from agent.compaction_store import compactions

    history = compactions(store, sid)
    info = store.get(sid)
    settings = {
        "provider": info["provider"],
        "model": info["model"],
        "mode": info["mode"],
        "max_tokens": view.max_tokens,
        "window": report.window,
    }
    if as_json:
        click.echo(
            json.dumps(
                {
                    "request": view.to_dict(),
                    "settings": settings,
                    "budget": report.to_dict(),
                    "compactions": history,
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    click.echo(
        f"session {sid}  turn {view.turn}  step {view.step}  epoch {view.epoch}  "
        f"messages {len(view.messages)}  max_tokens {view.max_tokens}"
    )
    click.echo(f"model {settings['provider']}/{settings['model']}  mode {settings['mode']}")
    if view.sent_note:
        click.echo(f"as sent: {view.sent_note}")
    click.echo(f"budget ({report.note}; window {report.window}):")
    for c in report.components:
        click.echo(f"  {c.name:<18} {c.tokens:>8}  {c.percent:6.2f}%")
    measured = f", measured {report.measured_input}" if report.measured_input is not None else ""
    click.echo(f"  {'input total':<18} {report.estimated_input:>8}  (estimate{measured})")
    cache = report.cache
    share = f"{100 * cache['prefix_share']:.1f}%"
    read = cache["measured_cache_read_share"]
    click.echo(
        f"cache-eligible prefix: {share} of {cache['input_tokens']} input tokens over "
        f"{cache['requests']} requests"
        + (f"; measured cache reads {100 * read:.1f}%" if read is not None else "")
    )
    for r in history:
        click.echo(
            f"compaction -> epoch {r['epoch']}: tier {r['tier']}, {r['removed_messages']} messages "
            f"removed, {r['before_tokens']} -> {r['after_tokens']} tokens, summary by "
            f"{r['source']}; full text in {r['archive']}"
        )
    click.echo(
        f"tools: {', '.join(t['name'] for t in view.tools)}"
        + (f"; deferred: {', '.join(view.deferred)}" if view.deferred else "")
    )
    click.echo("--- system ---")
    click.echo(
        view.system if full else view.system[:PREVIEW] + ("…" if len(view.system) > PREVIEW else "")
    )
    for i, message in enumerate(view.messages):
        click.echo(f"--- message {i} ({message.get('role')}) ---")
        for block in message.get("content", []):
            click.echo(_render_block(block, full))


def _render_block(block: dict[str, Any], full: bool) -> str:
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
    elif kind == "tool_use":
        text = f"[tool_use {block.get('id')}] {block.get('name')} {json.dumps(block.get('input'), ensure_ascii=False)}"
    elif kind == "tool_result":
        content = block.get("content")
        body = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        error = " error" if block.get("is_error") else ""
        text = f"[tool_result {block.get('tool_use_id')}{error}] {body}"
    else:
        text = json.dumps(block, ensure_ascii=False)
    if full or len(text) <= PREVIEW:
        return text
    return text[:PREVIEW] + f"… [{len(text) - PREVIEW} more characters; --full shows all]"


@context_group.command("diff")
@click.argument("session", required=False)
@click.option(
    "--turn", type=int, default=None, help="Compare this turn's first request with the one before."
)
@click.option(
    "--step", type=int, default=None, help="Compare this request (step) with the one before."
)
@_root_option("compare")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def diff_cmd(
    session: str | None, turn: int | None, step: int | None, root: Path | None, as_json: bool
) -> None:
    """Where a request stopped sharing a prefix with the previous one, and what caused it."""
    from agent import context_report as cr

    _one_of(turn, step)
    store = _store()
    sid = _resolve(store, session, root)
    chosen = cr.select_step(store, sid, turn=turn, step=step, first=True)
    diff = cr.prefix_diff(store, sid, chosen)
    if as_json:
        click.echo(json.dumps(diff.to_dict(), ensure_ascii=False, indent=2))
        return
    against = f"step {diff.previous_step}" if diff.previous_step is not None else "nothing"
    how = "measured on the requests as sent" if diff.measured else "rebuilt from the store"
    click.echo(
        f"step {diff.step} vs {against}: {diff.shared_tokens} of {diff.total_tokens} tokens "
        f"shared ({100 * diff.share:.1f}%, {how})"
    )
    if diff.diverges_at:
        click.echo(f"diverges at: {diff.diverges_at}")
    click.echo(f"cause: {diff.cause}")
