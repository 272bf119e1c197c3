"""What a `kiln run --ci` leaves behind once the agent stopped: the verification after, the
guards' undo of what the run planted (nested repositories, memory files, moved refs), the patch
of what this run changed (never the user's dirty files or the run's artifacts), and the branch
it commits to, refused for a run that stopped early unless ``--commit-partial``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agent.sandbox.gitlinks import GitlinkGuard
from agent.sandbox.guard import MemoryGuard
from agent.session import Session
from lsp_server.headless import ci, exit_codes, kept_edits, repo_git
from lsp_server.headless.artifacts import Artifacts
from lsp_server.headless.options import RunOptions
from lsp_server.headless.render import print_json


@dataclass
class CiState:
    """What a --ci run recorded before the agent started."""

    layout: repo_git.Layout
    dirty_before: set[str]
    guard: MemoryGuard | None
    links: GitlinkGuard | None = None
    contents: dict[str, bytes] = field(default_factory=dict)  # dirty tracked files, their digests
    kept: dict[str, bytes] = field(default_factory=dict)  # the user's files (``kept_edits``)
    ignored: set[str] = field(default_factory=set)  # the user's ignored files among them


def show_verify(opts: RunOptions, session: Session, phase: str, done: ci.Verification) -> None:
    """A verification takes minutes: stream-json says how it ended as soon as it does."""
    if opts.output_format == "stream-json":
        line = {"type": "verify", "session_id": session.id, "phase": phase, **done.to_dict()}
        print_json(line, indent=None)


def write_ci_outputs(
    opts: RunOptions,
    session: Session,
    report: ci.RunReport,
    before: ci.Verification | None,
    out: Artifacts,
    state: CiState,
    clock: ci.Deadline,
    redact: Callable[[str], str],
) -> None:
    """``redact`` is the prose outputs' (verification tails, the commit message); the patch
    loses only secret values, so that it applies."""
    # a file dirty before the run that the agent's commands changed (`sed -i`) is its edit too;
    # read before the verification after, which may rewrite files of its own
    # (as they are now, tracked or not: the index is no measure of an edit)
    now = repo_git.digests(state.layout.root, set(state.contents))
    edited = {p for p, digest in state.contents.items() if now[p] != digest}
    report.verify_before = before and replace(before, tail=redact(before.tail))
    if opts.verify:
        report.agent_ran_verify = any(
            b.get("type") == "tool_use"
            and b["name"] == "run_command"
            and opts.verify in b["input"].get("command", "")
            for m in session.transcript.messages
            for b in m["content"]
        )
    # A cancelled run is not verified: the runner's SIGKILL follows its SIGTERM within seconds,
    # and the outputs must be written before it.
    if opts.verify and report.stop_reason != "cancelled" and not clock.over():
        try:
            after = ci.run_verify(opts.verify, opts.root, sandbox=session.sandbox,
                                  timeout=clock.left())  # fmt: skip
            report.verify_after = replace(after, tail=redact(after.tail))
            show_verify(opts, session, "after", report.verify_after)
            if after.timed_out and clock.over():
                report.stop_reason = "max_time"
        except KeyboardInterrupt:
            report.stop_reason = "cancelled"
    for note in state.links.undo() if state.links is not None else []:  # before .git goes
        report.refusals.append(
            {"tool": "sandbox", "reason": f"nested repository recorded during the run: {note}"}
        )
    if state.guard is not None:
        for name in state.guard.undo():
            report.refusals.append(
                {"tool": "sandbox", "reason": f"{name} was created during the run; removed"}
            )
    try:
        for name in state.layout.restore_refs():
            report.refusals.append(
                {"tool": "git", "reason": f"{name} was changed during the run; put back"}
            )
    except repo_git.GitFailed as exc:
        report.error, report.blocked = str(exc), exc.exit_code
        return
    # What this run changed: files that became dirty during it, plus files the agent edited
    # that were dirty already; never the run's own artifacts or files dirty before it.
    layout = state.layout
    try:
        dirty = layout.dirty_paths()
    except repo_git.GitFailed as exc:  # the agent broke the index, say: one line, no outputs
        report.error, report.blocked = str(exc), exc.exit_code
        return
    # the user's work that a script or a chain of commands discarded (commit, then reset --keep)
    try:
        shown = dirty | kept_edits.ignored(layout)  # as git shows them: changed, not reset
        overwritten = kept_edits.tracked(layout, state.ignored)  # by a checkout: see put_back
    except repo_git.GitFailed:
        shown, overwritten = dirty | set(state.kept), set()
    restored = kept_edits.put_back(layout.root, state.kept, shown, overwritten)
    for _, why in restored:
        report.refusals.append({"tool": "git", "reason": why})
    paths = (dirty - state.dirty_before) | ((set(session.turn.files_modified) | edited) & dirty)
    paths -= {path for path, _ in restored}  # as it was before the run: not the run's change
    try:
        artifacts = out.open().relative_to(opts.root).as_posix() + "/"
        paths = {p for p in paths if not p.startswith(artifacts)}
    except ValueError:
        pass
    changed = sorted(paths)
    try:
        patch = session.runner.redact(layout.patch(changed, opts.patch_limits))
    except (repo_git.PatchTooLarge, repo_git.GitFailed) as exc:
        report.error, report.blocked = str(exc), exc.exit_code
        return  # no patch file, no commit: nothing half-done
    report.patch_path = str(out.write("changes.patch", patch))
    report.files = ci.diffstat(patch)
    early = report.stop_reason in exit_codes.EARLY_STOPS
    if opts.commit_branch and report.files and early and not opts.commit_partial:
        report.branch_skipped = (
            f"no branch `{opts.commit_branch}`: the run stopped early ({report.stop_reason}); "
            "the patch holds its work (`--commit-partial` commits it)"
        )
    elif opts.commit_branch and report.files:
        first_line = (report.answer.strip().splitlines() or ["Kiln changes"])[0][:72]
        # an issue's "closes #12" in the commit closes issue 12 when the branch is merged
        task = ci.unlinked(redact(opts.task).strip()[:500])  # a build log as the task: a token
        message = f"{ci.unlinked(first_line)}\n\nTask: {task}\nKiln session: {session.id}\n"
        try:
            report.commit = layout.commit_branch(opts.commit_branch, message, opts.author, changed)
        except repo_git.GitFailed as exc:  # HeadMoved: exit 5; a git failure: 1
            report.error, report.blocked = str(exc), exc.exit_code
            return
        report.branch = opts.commit_branch
