"""`kiln acp`'s built-in slash commands: ``/compact``, ``/context`` and ``/model``.

They do what the terminal chat's do (through ``lsp_server.core.commands``, which `kiln lsp`'s
requests share) and answer with text the client shows as the agent's message. None of them
calls the model or adds to the conversation: a later ``session/load`` does not replay them.
``/model NAME`` switches the session to another model of its provider from the next message
on (an ACP agent cannot open a new session for its client, as the terminal chat does).
"""

from __future__ import annotations

from typing import Any

from agent.overflow import model_id
from lsp_server.core import SessionManager
from lsp_server.core import commands as core_commands

USAGE = "`/model NAME` switches this session to another model from the next message on."


async def run(core: SessionManager, session_id: str, name: str, given: str) -> str:
    """Run built-in ``/name given`` on the session; the text to show (Markdown)."""
    match name:
        case "compact":
            return await _compact(core, session_id)
        case "context":
            return _context(await core_commands.context_report(core, session_id))
        case "model" if given:
            return await _switch(core, session_id, given)
        case "model":
            return _models(await core_commands.models(core, session_id))
    raise ValueError(f"not a built-in command: {name}")


async def _compact(core: SessionManager, session_id: str) -> str:
    record = await core_commands.compact(core, session_id)
    if record is None:
        return "Nothing to compact yet."
    return f"Compacted the conversation: {record.before_tokens:,} → {record.after_tokens:,} tokens."


def _context(report: dict[str, Any]) -> str:
    window = f"{report['contextWindow']:,}" if report.get("contextWindow") else "unknown"
    counts = ", ".join(_count(report[key], key[:-1]) for key in ("messages", "turns", "steps"))
    lines = [f"Context: {counts}; window {window} tokens."]
    budget = report.get("budget")
    if budget:
        lines += ["", f"Last request (step {report['step']}), by part ({budget['note']}):"]
        lines += [
            f"- {c['name']}: {c['tokens']:,} ({c['percent']:g}%)" for c in budget["components"]
        ]
    else:
        lines.append("Nothing has been sent to the model yet.")
    usage = report["usage"]
    read = sum(usage[k] for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens"))
    lines += ["", f"Spent: {read:,} input and {usage['output_tokens']:,} output tokens, "
                  f"${usage['costUsd']:.4f}."]  # fmt: skip
    if report["filesModified"]:
        lines.append("Files modified: " + ", ".join(report["filesModified"]) + ".")
    return "\n".join(lines)


def _models(listed: dict[str, Any]) -> str:
    others = [f"`{m['id']}`" for m in listed["models"] if m["id"] != listed["current"]]
    where = "its server lists" if listed["source"] == "server" else "known"
    lines = [f"Model: `{listed['current']}` ({listed['provider']})."]
    if others:
        lines.append(f"Others ({where}): {', '.join(others)}.")
    if listed.get("note"):
        lines.append(f"Note: {listed['note']}.")
    return "\n".join([*lines, USAGE])


async def _switch(core: SessionManager, session_id: str, name: str) -> str:
    if len(name.split()) > 1:
        return f"`/model` takes one model id, not {name!r}. {USAGE}"
    model = core.get(session_id).model
    if model_id(model) == name:
        return f"Model: `{name}` ({model.name}), as before."
    replaced = await core_commands.switch_model(core, session_id, name)
    return f"Model: `{name}` ({model.name}) from the next message on, instead of `{replaced}`."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
