"""Run one agent session without an editor: for a terminal (`kiln run`) or a pipeline (`--ci`)."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from dataclasses import replace
from typing import Any

import click

from agent.env_secrets import ci_secrets
from agent.events import ErrorReported, Event, StatusNote
from agent.output_budget import apply_budget
from agent.sandbox.gitlinks import GitlinkGuard
from agent.sandbox.guard import MemoryGuard
from agent.sandbox.nested_files import NestedFiles
from agent.session import AgentConfig, DiskHost, Session
from lsp_server.headless import ci, exit_codes, kept_edits, repo_git
from lsp_server.headless.artifacts import Artifacts
from lsp_server.headless.asker import asker
from lsp_server.headless.branch_name import check_branch
from lsp_server.headless.ci_outputs import CiState, show_verify, write_ci_outputs
from lsp_server.headless.options import RunOptions
from lsp_server.headless.redaction import RedactedEvents, each_string, shapes
from lsp_server.headless.render import (
    BROKEN_PIPE,
    ReaderGone,
    StreamJsonRenderer,
    TextRenderer,
    json_text,
    print_json,
)
from lsp_server.headless.terminal import safe

TASK_BUDGET = 100_000  # characters of a task sent whole (about 25,000 tokens)
CI_PREAMBLE = (
    "You are running unattended in CI: nobody can answer questions, so make reasonable choices, "
    "keep changes minimal, and finish with a short report of what you changed and why."
)


def _task_text(opts: RunOptions) -> str:
    text = opts.task
    if opts.verify:
        text += f"\n\nVerify your work by running `{opts.verify}` with run_command; the task is done when it passes."
    if opts.ci:
        text = f"{CI_PREAMBLE}\n\n{text}"
    return text


def run(opts: RunOptions) -> int:
    """Run the task; prints per output format; returns the exit code."""
    renderer: Any = {"text": TextRenderer, "stream-json": StreamJsonRenderer}.get(
        opts.output_format, lambda: None
    )()
    events: list[Event] = []
    running: list[Session] = []
    reader = ReaderGone()

    def show(event: Event) -> None:
        if not event.parent_tool_call_id:  # a sub-agent's error or limit is not the run's
            events.append(event)
        if renderer is None or reader.left:
            return
        try:
            renderer(event)
        except BrokenPipeError:  # `kiln run --ci … | head`: stop the run as a SIGTERM would
            reader.leave()
            for session in running:
                session.cancel()

    # what --ci redacts from its artifacts is kept out of the log it prints as it goes, too
    ci_mode = opts.ci or opts.mode == "ci"
    on_event = RedactedEvents(ci_secrets(opts.root) if ci_mode else [], show, shaped=ci_mode)

    clock = ci.Deadline.after(opts.max_minutes)
    host = DiskHost(on_event, asker(opts.assume_yes, opts.ci or opts.output_format != "text"))
    config = AgentConfig(
        mode="ci" if opts.ci else opts.mode,
        max_steps=opts.max_steps,
        max_seconds=opts.max_minutes * 60 if opts.max_minutes else None,
        max_cost_usd=opts.max_cost_usd,
        provider=opts.provider,
        model=opts.model,
        redact_env=opts.ci,
        extra={"sandbox": opts.sandbox, **({"user_cwd": opts.cwd} if opts.cwd else {})},
    )
    layout = repo_git.Layout.record(opts.root) if opts.ci else None
    if layout is not None and opts.commit_branch:
        check_branch(layout, opts.commit_branch)
        ci.check_author(opts.author)
    verify_box = _verify_sandbox(opts) if opts.verify and opts.ci else None
    if verify_box is not None:  # no sandbox to verify in: refused before anything is made
        verify_box.check_usable()
    # where --artifacts is before the agent can put a link there, no link of the checkout on
    # its way and no git directory holding it (artifacts.py); after the checks above, so a run
    # they refuse leaves no empty folder behind
    git_dirs = (layout.git_dir, layout.common_dir) if layout is not None else ()
    artifacts = Artifacts(opts.artifacts, opts.root, git_dirs) if opts.artifacts else None
    if artifacts is not None:
        artifacts.create()  # a folder that cannot be made fails now, not after the agent ran
    # What any process of the run (verify, MCP servers, skill scripts) leaves at names that
    # would redirect git or load as memory is removed before Kiln's own git calls (ci_outputs).
    run_guard = MemoryGuard(opts.root, nested=NestedFiles.take(opts.root)) if opts.ci else None
    run_links = GitlinkGuard(opts.root) if opts.ci else None  # nested repositories, likewise
    if opts.resume:
        session = Session.load(opts.resume, host=host, config=config)
    else:
        session = Session.create(opts.root, host=host, config=config)
        session.state["title"] = " ".join(opts.task.split())[:80]
        session.store.update(session.id, title=session.state["title"])
    running.append(session)
    box = session.sandbox
    if run_guard is not None and box is not None:  # the denied paths that are links, likewise
        run_guard.watch(box.readonly)
    # A build log given as the task (--task-file) can be megabytes: past the budget the model
    # gets its head and tail and reads the rest from the session folder, as a tool's output
    opts = replace(opts, task=apply_budget(opts.task, folder=session.store.folder(session.id),
                                           name="task", budget=TASK_BUDGET))  # fmt: skip
    if opts.output_format == "stream-json":  # what runs, before anything else (and the model)
        print_json(_init_event(opts, session), indent=None)
    # the user's work, before the verification (the repository's own code) can discard it
    ignored = kept_edits.ignored(layout) if layout is not None else set()
    kept = kept_edits.keep(layout.root, layout.dirty_paths() | ignored) if layout else {}
    before, reason = None, ""
    if opts.verify and verify_box is not None:
        # --max-minutes bounds the whole run, the verification included; Ctrl-C or SIGTERM
        # during it ends the run as cancelled, with its outputs written all the same
        try:
            before = ci.run_verify(opts.verify, opts.root, sandbox=verify_box,
                                   timeout=clock.left())  # fmt: skip
            reason = "max_time" if before.timed_out and clock.over() else ""
            before = replace(before, tail=on_event.redact(before.tail))
            show_verify(opts, session, "before", before)
        except KeyboardInterrupt:
            reason = "cancelled"
    # What is dirty now is not the run's work: the user's files, and what the verification
    # itself left (build output, __pycache__), which would otherwise go into the patch and branch
    dirty_before = layout.dirty_paths() if layout is not None else set()
    contents = layout.contents(dirty_before) if layout is not None else {}
    if not reason and clock.deadline is not None:
        config.max_seconds = clock.agent_seconds(before)  # the verification after keeps its time
    if reason:
        asyncio.run(session.aclose())  # the agent never started
    else:
        reason = _drive(session, _task_text(opts))
    on_event.flush()
    ci_state = (
        CiState(layout, dirty_before, run_guard, run_links, contents, kept, ignored)
        if layout is not None
        else None
    )
    code = _finish(opts, session, reason, before, events, ci_state, artifacts, clock)
    return BROKEN_PIPE if reader.left else code


def _init_event(opts: RunOptions, session: Session) -> dict[str, Any]:
    return {
        "type": "init",
        "session_id": session.id,
        "resumed": bool(opts.resume),
        "root": str(opts.root),
        "provider": session.model.name,
        "model": str(getattr(session.model, "model", "") or session.model.name),
        "mode": session.config.mode,
        "ci": opts.ci,
        "max_steps": opts.max_steps,
        "max_minutes": opts.max_minutes,
        "max_cost_usd": opts.max_cost_usd,
    }


def _verify_sandbox(opts: RunOptions) -> Any:
    """The sandbox the verification runs in before the session exists (same policy)."""
    from agent.sandbox import Sandbox, load_policy
    from agent.session_store import kiln_home

    home = kiln_home()
    policy = load_policy(opts.root, home, "ci" if opts.ci else opts.mode)
    return Sandbox(
        opts.root,
        policy,
        kiln_home=home,
        required=opts.sandbox == "required",
        disabled=opts.sandbox == "off",
    )


def _drive(session: Session, text: str) -> str:
    # asyncio puts SIGTERM back to its default when its loop closes (SIGINT to Python's): kept
    # so, a SIGTERM during the verification after would kill kiln before it wrote anything
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return asyncio.run(_drive_loop(session, text))
    finally:
        for sig, handler in saved.items():
            if handler is None:
                continue
            try:
                signal.signal(sig, handler)
            except ValueError:  # not the main thread: asyncio left them alone too
                pass


def _drive_loop(session: Session, text: str) -> Any:
    async def main() -> str:
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(session.prompt(text))
        try:
            loop.add_signal_handler(signal.SIGINT, session.cancel)
            loop.add_signal_handler(signal.SIGTERM, session.cancel)
        except (NotImplementedError, RuntimeError):
            pass
        try:
            return await task
        finally:
            await session.aclose()

    return main()


def _finish(
    opts: RunOptions,
    session: Session,
    reason: str,
    before: ci.Verification | None,
    events: list[Event],
    ci_state: CiState | None,
    artifacts: Artifacts | None,
    clock: ci.Deadline,
) -> int:
    errors = [e.message for e in events if isinstance(e, ErrorReported)]
    if reason in exit_codes.LIMITS:  # which limit, and how far the run got: the turn's last note
        errors += [e.text for e in events if isinstance(e, StatusNote)][-1:]
    shaped = opts.ci or session.config.mode == "ci"  # the prose outputs lose token-shaped words

    def prose(value: Any) -> Any:
        redacted = each_string(value, session.runner.redact)  # a string, or a refusal's record
        return shapes(redacted) if shaped else redacted

    report = ci.RunReport(
        task=prose(opts.task),  # a build log as the task can hold a secret
        exit_code=0,
        outcome="",
        stop_reason=reason,
        session_id=session.id,
        answer=prose(session.transcript.final_text()),
        usage=session.turn.usage.to_dict(),
        cost_usd=session.turn.cost_usd,  # this run's, as --max-cost-usd counts
        session_cost_usd=session.turn.cost_before + session.turn.cost_usd,
        steps=session.turn.steps,  # this run's requests, as --max-steps counts
        refusals=session.turn.refusals,
        memory_proposals=session.turn.memory_proposals,
        files_modified=list(session.turn.files_modified),
        error=errors[-1] if errors else "",
    )
    out = artifacts or Artifacts(session.store.folder(session.id), opts.root)
    out.open()
    lines = [prose(json_text(shapes(m))) + "\n" for m in session.transcript.messages]
    report.transcript_path = str(out.write("transcript.jsonl", "".join(lines)))
    if ci_state is not None:
        write_ci_outputs(opts, session, report, before, out, ci_state, clock, prose)
        if not report.patch_path:  # a folder used before: its patch is not this run's work
            out.remove("changes.patch")
    if report.stop_reason == "max_time" and not report.error:  # the clock ran out in a verification
        after = report.verify_after is not None and report.verify_after.timed_out
        report.error = (f"time limit reached (--max-minutes {opts.max_minutes:g}) during the "
                        f"verification {'after' if after else 'before'}")  # fmt: skip
    report.exit_code = _exit_code(opts, report)
    report.duration_ms = int((time.monotonic() - clock.started) * 1000)
    report.outcome = exit_codes.MEANING[report.exit_code]
    if shaped:  # what a tool's output or a refusal quoted, and an error, as the answer is
        report.error, report.branch_skipped = prose(report.error), prose(report.branch_skipped)
        report.refusals = prose(report.refusals)  # a command a refusal names: secrets too
        report.memory_proposals = shapes(report.memory_proposals)
    if opts.ci:
        report.summary_path = str(out.write("summary.md", ci.markdown_summary(report)))
        out.write("report.json", json_text(report.to_dict(), indent=2))
    # one line whatever the output format: the outputs were refused, or a limit or the provider
    # stopped the run (the text view printed the agent's stop as it happened; not a verification's)
    shown = bool(errors) and opts.output_format == "text"
    stopped = report.stop_reason in (*exit_codes.LIMITS, "error") and report.error and not shown
    if report.blocked or stopped:
        click.echo(f"kiln: {safe(report.error)}", err=True)
    if opts.output_format == "json":
        print_json(report.to_dict())
    elif opts.output_format == "stream-json":
        print_json({"type": "result", **report.to_dict()}, indent=None)
    else:
        err = sys.stderr
        usage = report.usage
        err.write(
            f"\n[{report.outcome}] {report.stop_reason}; {report.steps} steps; tokens in {session.turn.usage.total_input} "
            f"(cache read {usage['cache_read_tokens']}), out {usage['output_tokens']}; "
            f"cost ${report.cost_usd:.4f} this run; session {session.id}\n"
        )
        if opts.ci:
            err.write(f"summary: {report.summary_path}\n")
            if report.patch_path:  # none when the outputs were refused (the line above says why)
                err.write(f"patch: {report.patch_path}\n")
    return report.exit_code


def _exit_code(opts: RunOptions, report: ci.RunReport) -> int:
    if report.blocked:
        return report.blocked
    reason = report.stop_reason
    if reason == "error":
        return exit_codes.PROVIDER
    if reason in exit_codes.LIMITS:
        return exit_codes.LIMIT
    if reason == "cancelled":
        return exit_codes.CANCELLED
    if not opts.ci:
        return exit_codes.REFUSED if report.refusals else exit_codes.OK
    changed = bool(report.files)
    if report.verify_after is not None:
        if report.verify_after.passed:
            if not changed:
                return exit_codes.NOTHING_TO_DO
            return exit_codes.OK
        if report.refusals:
            return exit_codes.REFUSED
        return exit_codes.CHANGED_UNVERIFIED if changed else exit_codes.NOT_FIXED
    if report.refusals and not changed:
        return exit_codes.REFUSED
    return exit_codes.CHANGED_UNVERIFIED if changed else exit_codes.NOTHING_TO_DO


def run_or_exit(opts: RunOptions) -> None:
    """Exit with the run's code; a failure leaves as an exception, which the CLI turns into one
    line, its exit code and (JSON output) the result object (``failed_run``)."""
    sys.exit(run(opts))
