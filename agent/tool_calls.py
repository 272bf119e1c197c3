"""Running one tool call for a session: argument checks, permission, the output budget, events,
and errors turned into tool results the model can act on (a tool never crashes the loop)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from agent.errors import KilnError, NoAnswer, PathOutsideWorkspace, PermissionDenied, ToolError
from agent.output_budget import apply_budget
from agent.protocols import EditProposal, PermissionRequest, ToolContext
from agent.tools.base import check_arguments
from agent.tools.deferred_tools import PROXY_NAME, tool_description, unwrap_proxy
from agent.types import Block, ToolOutput

if TYPE_CHECKING:
    from agent.session import Session


async def run_tool(session: Session, call: Block) -> Block:
    """Run one tool call to a tool_result block: check, authorise, run, budget, report."""
    # call_tool{name, arguments} runs the named tool: checked, authorised and reported as it.
    name, args = unwrap_proxy(call["name"], call.get("input", {}))
    call_id = call["id"]
    tool = session.find_tool(name)
    kind = getattr(tool, "kind", "other")
    await session.emit(
        "tool_call",
        id=call_id,
        name=name,
        title=title(name, args),
        tool_kind=kind,
        arguments=args,
        locations=locations(session, args),
    )
    started = time.monotonic()
    error: tuple[str, str] | None = None
    rich: ToolOutput | None = None
    try:
        if tool is None:
            known = ", ".join(session.tools)
            raise ToolError(
                f"unknown tool {name!r}",
                suggestion=f"available tools: {known}; use tool_search to find others, "
                "then call_tool to run them",
            )
        args = check_arguments(tool.spec, args)
        if name == PROXY_NAME:  # still the proxy after unwrapping: it named itself
            raise ToolError(
                "call_tool cannot run call_tool",
                suggestion='call_tool{"name": <found tool>, "arguments": {...}}',
            )
        if kind == "edit":  # edits are authorised in propose_edit, once the diff is known
            session._edit_calls[call_id] = (name, args)
        else:
            await authorise(session, name, args, call_id)
        output = await tool.run(
            args, ToolContext(root=session.root, session=session, call_id=call_id)
        )
        if isinstance(output, ToolOutput):
            rich, output = output, output.text
            if rich.error:
                error = (rich.error, "read the output and fix the cause before running it again")
        if "<external_content" in output:
            session.tainted = True
        output = apply_budget(
            output,
            folder=session.store.folder(session.id),
            name=f"{session.step_count}-{call_id}",
            budget=session.config.output_budget,
        )
        is_error = False
    except (ToolError, PathOutsideWorkspace, KilnError) as exc:
        suggestion = getattr(exc, "suggestion", "") or getattr(exc, "hint", "")
        error = (str(exc), suggestion)
        output = error_text(type(exc).__name__, name, args, str(exc), suggestion)
        is_error = True
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a tool bug is reported to the model, never crashes the loop
        error = (f"{type(exc).__name__}: {exc}", "")
        output = error_text(
            type(exc).__name__,
            name,
            args,
            str(exc),
            "this looks like a tool bug; try another approach",
        )
        is_error = True
    seconds = time.monotonic() - started
    output = session.redact(output)
    session.status.record_call(name, args if isinstance(args, dict) else {}, seconds, error)
    await session.emit(
        "tool_call_update",
        id=call_id,
        name=name,
        status="failed" if is_error else "completed",
        output=output[:4000],
        is_error=is_error,
        duration_ms=int(seconds * 1000),
    )
    return {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": rich.content(output) if rich is not None and not is_error else output,
        "is_error": is_error,
    }


async def authorise(
    session: Session,
    name: str,
    args: dict[str, Any],
    call_id: str,
    proposal: EditProposal | None = None,
) -> None:
    """Allow, ask the host, or refuse (recorded, and raised as PermissionDenied)."""
    check = session.permissions.check(name, args, from_external=session.tainted)
    if check.verdict == "allow":
        return
    if check.verdict == "ask":
        request = PermissionRequest(
            tool=name,
            title=title(name, args),
            arguments=args,
            reason=check.reason,
            call_id=call_id,
            from_external=session.tainted,
            edit=proposal,
        )
        await session.emit("permission", id=call_id, tool=name, reason=check.reason)
        try:
            decision = await session.host.request_permission(request)
        except NoAnswer as exc:  # refused, but nobody declined: say what happened
            check.reason = str(exc)
        else:
            session.permissions.remember_answer(name, args, decision)
            if decision in ("allow_once", "allow_always"):
                return
            unattended = getattr(session.host, "unattended_reason", "")
            check.reason = unattended or check.reason or "the user declined"
    session.refusals.append(
        {"tool": name, "arguments": args, "reason": check.reason or "denied", "turn": session.turn}
    )
    await session.emit("refusal", id=call_id, tool=name, reason=check.reason)

    raise PermissionDenied(
        f"permission denied for {name}: {check.reason or 'not allowed'}",
        hint="do not retry this action; continue without it or explain what you need",
    )


class DeferredAdapter:
    """A deferred tool from skills_registry seen through the harness's Tool protocol."""

    kind = "other"

    def __init__(self, tool: Any) -> None:
        from agent.types import ToolSpec

        self.tool = tool
        self.spec = ToolSpec(tool.name, tool_description(tool), tool.input_schema)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from agent.tools.base import external

        return external(f"tool:{self.tool.name}", await self.tool.call(args))


def title(name: str, args: Any) -> str:
    if not isinstance(args, dict):
        return name
    for key in ("path", "command", "query", "pattern", "name", "description"):
        if key in args:
            return f"{name}: {str(args[key])[:80]}"
    return name


def locations(session: Session, args: Any) -> list[dict[str, Any]]:
    if isinstance(args, dict) and isinstance(args.get("path"), str):
        return [{"path": args["path"], "line": args.get("offset")}]
    return []


def error_text(kind: str, tool: str, args: Any, message: str, suggestion: str) -> str:
    from agent.types import canonical_json

    shown = canonical_json(args)[:500] if isinstance(args, dict) else repr(args)[:500]
    lines = [f"error: {kind}", f"tool: {tool}", f"arguments: {shown}", f"message: {message}"]
    if suggestion:
        lines.append(f"suggestion: {suggestion}")
    return "\n".join(lines)
