"""The tool runner: lookup (built-in and deferred tools), argument checks, permission, edit
proposals, the output budget, redaction, and errors turned into tool results the model can act
on (a tool never crashes the loop).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent.errors import KilnError, NoAnswer, PathOutsideWorkspace, PermissionDenied, ToolError
from agent.events import (
    AgentEvent,
    EditProposed,
    PermissionAsked,
    Refused,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
)
from agent.injection import external
from agent.output_budget import apply_budget, budget_for_window
from agent.permissions import Permissions
from agent.protocols import (
    EditOutcome,
    EditProposal,
    Host,
    PermissionRequest,
    Tool,
    ToolContext,
    ToolServices,
)
from agent.sandbox import SandboxUnavailable
from agent.sandbox.guard import MemoryGuard
from agent.status import StatusBar
from agent.tool_call_text import error_text, input_fault, locations, prompt_detail, title
from agent.tools.base import check_arguments
from agent.tools.deferred_tools import PROXY_NAME, tool_description, tool_schema, unwrap_proxy
from agent.transcript import not_run
from agent.turn import TurnState
from agent.types import INVALID_JSON, Block, ToolOutput, ToolSpec
from agent.workspace import Workspace
from kiln_errors.shown import cut
from skills_registry.errors import ToolCallError

Emit = Callable[[AgentEvent], Awaitable[None]]


class RanThenCancelled(Exception):
    """The turn was cancelled while the host was told a tool had finished: the tool ran, so
    its result is kept for the trajectory (``SessionTurn.run_tools``), not called "not run"."""

    def __init__(self, result: Block) -> None:
        super().__init__("cancelled after the tool ran")
        self.result = result


class ToolRunner:
    def __init__(
        self,
        tools: list[Tool],
        *,
        permissions: Permissions,
        host: Host,
        emit: Emit,
        turn: TurnState,
        status: StatusBar,
        workspace: Workspace,
        output_folder: Path,
        output_budget: int,
        secrets: list[tuple[str, str]],
        window_tokens: Callable[[], int] = lambda: 0,
    ) -> None:
        self.tools: dict[str, Tool] = {t.spec.name: t for t in tools}
        self.deferred: dict[str, Tool] = {}
        self.permissions = permissions
        self.host = host
        self.emit = emit
        self.turn = turn
        self.status = status
        self.workspace = workspace
        self.output_folder = output_folder
        self.output_budget = output_budget
        self.window_tokens = window_tokens  # the model's window now (a session can switch models)
        self.secrets = secrets
        self._edit_calls: dict[str, tuple[str, dict[str, Any]]] = {}  # call id -> (tool, args)
        self._running: set[str] = set()  # calls authorised and started, not yet finished
        self.sandbox: Any = None  # agent.sandbox.Sandbox, set by agent.sandbox.attach
        self.command_grants: dict[str, bool] = {}  # run_command call id -> granted the network

    # -- the tool table (ToolSpecs) -------------------------------------------------------------

    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self.tools.values()]

    def deferred_specs(self) -> list[ToolSpec]:
        return [t.spec for t in self.deferred.values()]

    def find(self, name: str) -> Tool | None:
        return self.tools.get(name) or self.deferred.get(name)

    def announce(self, tools: list[Any]) -> list[Any]:
        """Make deferred tools callable from now on; returns the ones that are new."""
        new = [t for t in tools if t.name not in self.deferred and t.name not in self.tools]
        for tool in new:
            self.deferred[tool.name] = DeferredAdapter(tool)
        return new

    def redact(self, text: str) -> str:
        for name, value in self.secrets:
            text = text.replace(value, f"[REDACTED:{name}]")
        return text

    async def run_all(
        self,
        calls: list[Block],
        services: ToolServices,
        keep: Callable[[list[Block]], None],
        reason: Callable[[], str],
    ) -> list[Block]:
        """Run a step's calls together. Cancelled meanwhile, the calls that ran keep their
        results (an edit made stays an edit made for the model), the others are answered
        "not run", and ``keep`` gets them all before the cancel goes on."""
        done: dict[str, Block] = {}

        async def run(call: Block) -> None:
            try:
                done[call["id"]] = await self.run(call, services)
            except RanThenCancelled as exc:
                done[call["id"]] = exc.result
                raise asyncio.CancelledError from None

        try:
            await asyncio.gather(*(run(c) for c in calls))
        except asyncio.CancelledError:
            ids = [c["id"] for c in calls]
            cut = self._running.intersection(ids)  # a command killed as it ran is no "not run"
            self._running.difference_update(cut)
            if done or cut:
                keep([done.get(i) or not_run(i, reason(), ran=i in cut) for i in ids])
            raise
        return [done[c["id"]] for c in calls]

    # -- one call -------------------------------------------------------------------------------

    async def run(self, call: Block, services: ToolServices) -> Block:
        """Run one tool call to a tool_result block: check, authorise, run, budget, report."""
        # call_tool{name, arguments} runs the named tool: checked, authorised and reported as it.
        name, args = unwrap_proxy(call["name"], call.get("input", {}))
        call_id = call["id"]
        tool = self.find(name)
        kind = getattr(tool, "kind", "other")
        await self.emit(
            ToolCallStarted(
                id=call_id,
                name=name,
                title=title(name, args),
                tool_kind=kind,
                arguments=args,
                locations=locations(args),
            )
        )
        started = time.monotonic()
        error: tuple[str, str] | None = None
        rich: ToolOutput | None = None
        try:
            if tool is None:
                found = "tool_search" in self.tools  # a sub-agent has no deferred tools
                raise ToolError(
                    f"unknown tool {cut(name)!r}",
                    suggestion=f"available tools: {', '.join(self.tools)}"
                    + (
                        "; use tool_search to find others, then call_tool to run them"
                        if found
                        else ""
                    ),
                )
            if self.turn.reply_cut and isinstance(args, dict) and INVALID_JSON in args:
                raise ToolError(
                    f"the reply was cut at the output limit inside the arguments of {name}, "
                    "so it was not run",
                    suggestion="do the same in smaller calls (a file in several edit_file "
                    "calls, or a short write_file then edit_file to add the rest)",
                )
            args = check_arguments(tool.spec, args, nul=getattr(tool, "passes_nul", False))
            if name == PROXY_NAME:  # still the proxy after unwrapping: it named itself
                raise ToolError(
                    "call_tool cannot run call_tool",
                    suggestion='call_tool{"name": <found tool>, "arguments": {...}}',
                )
            if kind == "edit":  # edits are authorised in propose_edit, once the diff is known,
                check = self.permissions.check(name, args, from_external=self.turn.tainted)
                if check.verdict == "deny":  # unless refused anyway: then nothing is read
                    await self.authorise(name, args, call_id)
                self._edit_calls[call_id] = (name, args)
            else:
                await self.authorise(name, args, call_id)
                self._running.add(call_id)
                await self.emit(ToolCallRunning(id=call_id, name=name))
            output = await self._run_confined(
                tool, args, ToolContext(self.workspace.root, services, call_id)
            )
            if isinstance(output, ToolOutput):
                rich, output = output, output.text
                for reason in rich.refused:  # undone after it ran: a refusal all the same
                    await self._refused(name, args, call_id, reason)
                if rich.error:
                    error = (
                        rich.error,
                        "read the output and fix the cause before running it again",
                    )
            if "<external_content" in output:
                self.turn.tainted = True
            # Redacted before it is cut and saved: the saved text is read back by the model,
            # and a cut through a secret would leave a part that no longer matches it.
            output = apply_budget(
                self.redact(output),
                folder=self.output_folder,
                name=f"{self.turn.step_count}-{call_id}",
                budget=budget_for_window(self.window_tokens(), self.output_budget),
            )
            is_error = False
        except (ToolError, PathOutsideWorkspace, KilnError) as exc:
            if isinstance(exc, SandboxUnavailable):  # the policy refused it, as a rule would
                await self._refused(name, args, call_id, str(exc))
            suggestion = getattr(exc, "suggestion", "") or exc.hint
            error = (str(exc), suggestion)
            output = error_text(type(exc).__name__, name, args, str(exc), suggestion)
            is_error = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a tool bug is reported to the model, never crashes the loop
            if (fault := input_fault(exc, args, self.workspace.root)) is not None:
                error = fault  # a name too long, a link loop: the input's, not the tool's
                output = error_text(type(exc).__name__, name, args, *fault)
            else:
                error = (f"{type(exc).__name__}: {exc}", "")
                output = error_text(
                    type(exc).__name__,
                    name,
                    args,
                    str(exc),
                    "this looks like a tool bug; try another approach",
                )
            is_error = True
        finally:
            self._edit_calls.pop(call_id, None)
        self._running.discard(call_id)  # ran to its end (a cancel leaves it for run_all)
        seconds = time.monotonic() - started
        output = self.redact(output)
        given = args if isinstance(args, dict) else {}
        self.status.record_call(name, given, seconds, error)
        self.turn.tool_ran(name, given, error[0] if error else None)
        result = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": rich.content(output) if rich is not None and not is_error else output,
            "is_error": is_error,
        }
        finished = ToolCallFinished(
            id=call_id,
            name=name,
            status="failed" if is_error else "completed",
            output=output[:4000],
            is_error=is_error,
            duration_ms=int(seconds * 1000),
        )
        try:
            await self.emit(finished)
        except asyncio.CancelledError:
            raise RanThenCancelled(result) from None  # the tool ran: its result must stay
        return result

    async def _run_confined(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Run a tool with the sandbox as the launcher of any process it starts (skill scripts,
        sidecar tools, stdio MCP servers: ``skills_registry.launcher``)."""
        from skills_registry.launcher import LAUNCHER

        token = LAUNCHER.set(self.sandbox.launcher() if self.sandbox is not None else None)
        # A skill's script or sidecar tool, an MCP server: programs of a third party, in the
        # sandbox like a command and, like a command, leaving no memory, settings or autorun file.
        guard = None
        if self.sandbox is not None and tool in self.deferred.values():
            box = self.sandbox  # a denied path that is a link is put back too (``links``)
            guard = MemoryGuard(
                self.workspace.root, box.guarded, box.nested_files(), links=box.readonly
            )
        try:
            output = await tool.run(args, ctx)
        finally:
            LAUNCHER.reset(token)
            removed = guard.undo() if guard is not None else []
        if removed and isinstance(output, str):
            output += (
                f"\n[removed {', '.join(removed)}: a tool's program does not create memory, "
                "settings or files an editor or git runs on its own]"
            )
        return output

    async def authorise(
        self, name: str, args: dict[str, Any], call_id: str, proposal: EditProposal | None = None
    ) -> None:
        """Allow, ask the host, or refuse (recorded, and raised as PermissionDenied)."""
        check = self.permissions.check(name, args, from_external=self.turn.tainted)
        if check.verdict == "allow":
            if name == "run_command":
                self.command_grants[call_id] = check.network
            return
        if check.verdict == "ask":
            request = PermissionRequest(
                tool=name,
                title=title(name, args),
                arguments=args,
                reason=check.reason,
                call_id=call_id,
                from_external=check.external,  # an action injected text would want, after it
                edit=proposal,
                detail=prompt_detail(name, args, check),
            )
            await self.emit(PermissionAsked(id=call_id, tool=name, reason=check.reason))
            try:
                decision = await self.host.request_permission(request)
            except NoAnswer as exc:  # refused, but nobody declined: say what happened
                check.reason = str(exc)
            else:
                self.permissions.remember_answer(name, args, decision, check)
                if decision in ("allow_once", "allow_always"):
                    if name == "run_command":
                        self.command_grants[call_id] = check.network  # a yes grants the network
                    return
                check.reason = self.host.unattended_reason or check.reason or "the user declined"
        await self._refused(name, args, call_id, check.reason)
        raise PermissionDenied(
            f"permission denied for {name}: {check.reason or 'not allowed'}",
            hint="do not retry this action; continue without it or explain what you need",
        )

    async def _refused(self, name: str, args: Any, call_id: str, reason: str) -> None:
        """A refusal of the policy: recorded for the report and shown to the host."""
        record = {"tool": name, "arguments": args, "reason": reason or "denied"}
        self.turn.refusals.append({**record, "turn": self.turn.number})
        await self.emit(Refused(id=call_id, tool=name, reason=reason))

    async def propose_edit(self, path: Path, old: str, new: str, call_id: str) -> EditOutcome:
        """Authorise a whole-file edit with its diff, announce it, and hand it to the host."""
        rel = self.workspace.relative(path)
        proposal = EditProposal(
            path=rel,
            old_text=old,
            new_text=new,
            proposal_id=uuid.uuid4().hex[:12],
            call_id=call_id,
            meta={"abspath": str(path), "root": str(self.workspace.root)},
            created=not path.exists(),
        )
        name, args = self._edit_calls.pop(call_id, ("write_file", {"path": rel}))
        # The diff is announced first, so a front-end shows it while the permission is asked
        # (and the user sees what was refused, if it is).
        await self.emit(
            EditProposed(
                id=call_id,
                proposal_id=proposal.proposal_id,
                path=rel,
                old_text=old,
                new_text=new,
                created=proposal.created,
            )
        )
        await self.authorise(name, args, call_id, proposal)
        self._running.add(call_id)
        await self.emit(ToolCallRunning(id=call_id, name=name))
        outcome = await self.host.apply_edit(proposal)
        if outcome == "applied":
            self.turn.modified(rel)
        return outcome


class DeferredAdapter:
    """A deferred tool from skills_registry seen through the harness's Tool protocol."""

    kind, passes_nul = "other", True  # its arguments go on as JSON, a NUL too

    def __init__(self, tool: Any) -> None:
        self.tool = tool
        self.spec = ToolSpec(tool.name, tool_description(tool), tool_schema(tool))

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        source = f"tool:{self.tool.name}"
        try:
            return external(source, await self.tool.call(args))
        except ToolCallError as exc:
            # The server's or script's own words (an MCP `isError` text, a script's stderr):
            # third-party text like its results, so the model reads them as data.
            raise ToolCallError(external(source, str(exc)), hint=exc.hint) from None
