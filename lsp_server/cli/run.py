"""`kiln run TASK`: one agent session in the current workspace, for a terminal or a pipeline."""

from __future__ import annotations

from pathlib import Path

import click

from agent.config import STEP_LIMIT
from agent.permissions import MODES
from lsp_server.cli.options import FiniteFloat
from lsp_server.cli.query_args import QueryCommand


def _given(ctx: click.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source != click.core.ParameterSource.DEFAULT


def workspace_for(root: Path, *, explicit: bool) -> tuple[Path, str]:
    """The workspace and the user's directory relative to it: without ``--root``, the
    repository holding the current directory (so its root memory and files are visible)."""
    from agent.memory import repository_root

    here = root.resolve()
    if explicit:
        return here, ""
    repo = repository_root(here)
    return (repo, str(here.relative_to(repo))) if repo != here else (here, "")


def resumed_workspace(given: str, root: Path, cwd: str, *, explicit: bool) -> tuple[str, Path, str]:
    """The full id of the session ``--resume`` names (a unique prefix will do) and the
    workspace it works in: another ``--root`` is refused (the edits would land in one folder
    while the patch and verification of ``--ci`` looked at the other); from another folder,
    the user is told where the session works."""
    from agent.session_store import SessionStore, kiln_home
    from agent.workspace import check_root

    store = SessionStore()
    try:
        session_id = store.resolve(given)
        stored = Path(store.get(session_id)["root"])
    finally:
        store.close()
    if stored == root:
        return session_id, root, cwd
    if explicit:
        raise click.UsageError(
            f"session {session_id} works in {stored}, not in --root {root} "
            "(leave --root out to continue it there)"
        )
    check_root(stored, kiln_home(), resumed=session_id)  # refused before the note, not after
    click.echo(f"kiln: session {session_id} works in {stored}", err=True)
    return session_id, stored, ""


class TaskCommand(QueryCommand):
    """TASK may start with a dash when it reads as text ("- fix the failing date test")."""

    spaced_text_only = True


@click.command("run", cls=TaskCommand)
@click.argument("task", required=False)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    help="Workspace root (default: the repository holding the current folder, else the "
    "current folder).",
)
@click.option(
    "--output-format",
    type=click.Choice(["text", "json", "stream-json"]),
    default="text",
    show_default=True,
    help="text: the answer on stdout, the rest on stderr; json: one report at the end; "
    "stream-json: one event per line (docs/ci.md).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1, max=STEP_LIMIT),
    default=50,
    show_default=True,
    help=f"Model requests per run (sub-agents' and compaction summaries' included), "
    f"1 to {STEP_LIMIT:,}.",
)
@click.option("--max-minutes", type=FiniteFloat(min=0, min_open=True), help="Wall-clock limit.")
@click.option(
    "--max-cost-usd",
    type=FiniteFloat(min=0),
    help="This run's cost limit in USD, from measured usage and the price table; each "
    "request's output is capped to what it can still pay.",
)
@click.option(
    "--mode", type=click.Choice(MODES), default="ask", show_default=True, help="Permission mode."
)
@click.option(
    "--yes", "-y", "assume_yes", is_flag=True, help="Answer yes to every permission question."
)
@click.option(
    "--ci",
    is_flag=True,
    help="Non-interactive CI mode: ci permissions, patch, summary, exit codes.",
)
@click.option(
    "--task-file",
    type=click.Path(dir_okay=False, exists=True, allow_dash=True, path_type=Path),
    help="Read the task from a file ('-': from stdin, as TASK '-' does).",
)
@click.option(
    "--github-event",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Take the task from a GitHub event payload (comment, issue or PR); refused unless the "
    "author has write access (or is in KILN_ALLOWED_USERS) and it is not a fork's PR.",
)
@click.option(
    "--verify", help="With --ci: command that proves the task is done (run before and after)."
)
@click.option("--commit-branch", help="With --ci: commit the changes on this new branch.")
@click.option(
    "--commit-partial",
    is_flag=True,
    help="With --commit-branch: make the branch also when the run stopped early (a limit, a "
    "provider failure, a cancel); otherwise such a run's work is only in the patch.",
)
@click.option("--author", help="With --commit-branch: commit author, 'Name <email>'.")
@click.option(
    "--artifacts",
    type=click.Path(path_type=Path),
    help="With --ci: folder for the patch, summary, report and transcript (default: the "
    "session folder); never one in a git directory (.git).",
)
@click.option(
    "--max-patch-mb",
    type=FiniteFloat(min=0, min_open=True),
    default=50,
    show_default=True,
    help="With --ci: the largest patch (and changed files' size) before the run's outputs are "
    "refused with exit code 3; at most 20,000 files either way.",
)
@click.option(
    "--no-sandbox",
    is_flag=True,
    help="Run commands unconfined (without bubblewrap/sandbox-exec); --ci otherwise refuses them.",
)
@click.option(
    "--resume",
    "resume",
    metavar="SESSION",
    help="Continue an earlier session (its id, or a unique start of it).",
)
@click.option("--provider", help="Model provider (anthropic, openai, azure, local, scripted).")
@click.option("--model", help="Model id for the provider.")
def run_cmd(
    task: str | None,
    root: Path,
    output_format: str,
    max_steps: int,
    max_minutes: float | None,
    max_cost_usd: float | None,
    mode: str,
    assume_yes: bool,
    ci: bool,
    task_file: Path | None,
    github_event: Path | None,
    verify: str | None,
    commit_branch: str | None,
    commit_partial: bool,
    author: str | None,
    artifacts: Path | None,
    max_patch_mb: float,
    no_sandbox: bool,
    resume: str | None,
    provider: str | None,
    model: str | None,
) -> None:
    """Run TASK with the agent in the workspace and print the stream (TASK '-': read it from
    stdin)."""
    import os

    from kiln_errors.settled_imports import settled_imports

    with settled_imports():  # the runner's imports: most of what the process holds
        from lsp_server.headless.github import check_event_actor, task_from_event
        from lsp_server.headless.repo_git import Limits
        from lsp_server.headless.runner import RunOptions, run_or_exit

    sources = [s for s in (task, task_file) if s is not None]  # "" is a task: an empty one
    if len(sources) > 1 or not (sources or github_event):
        raise click.UsageError("give exactly one of TASK, --task-file or --github-event")
    if github_event:
        # Who asked is checked whenever there is an event, even if the task text is given.
        check_event_actor(
            github_event,
            os.environ.get("KILN_ALLOWED_USERS", ""),
            os.environ.get("GITHUB_EVENT_NAME", ""),
        )
    # an empty value (`--verify "$UNSET"`) would silently drop what was asked for
    for name, value in (("--resume", resume), ("--provider", provider), ("--model", model),
                        ("--verify", verify), ("--commit-branch", commit_branch)):  # fmt: skip
        if value is not None and not value.strip():
            raise click.UsageError(f"{name} is empty")
    if task == "-":  # `… | kiln run -`, as `codex exec -` reads it
        task_file = Path("-")
    if task_file:  # at most TASK_FILE_MAX bytes: /dev/zero or a huge log is refused
        from lsp_server.cli.task_input import read_task

        task = read_task(task_file)
    elif github_event and not task:
        task = task_from_event(github_event)
    assert task is not None
    if not task.strip():
        raise click.UsageError("the task is empty")
    task.encode("utf-8")  # a byte from a Latin-1 terminal: refused (one line) before a session
    # an option that would do nothing is refused, not dropped without a word
    ctx = click.get_current_context()
    given = {"--verify": verify is not None, "--commit-branch": commit_branch is not None,
             "--artifacts": artifacts is not None, "--max-patch-mb": _given(ctx, "max_patch_mb")}  # fmt: skip
    for name in [n for n, on in given.items() if on and not ci]:
        raise click.UsageError(f"{name} needs --ci")
    for name, on in (("--commit-partial", commit_partial), ("--author", author is not None)):
        if on and not commit_branch:
            raise click.UsageError(f"{name} needs --commit-branch")
    if ci and mode != "ci" and _given(ctx, "mode"):
        click.echo(f"kiln: --ci runs with ci permissions; --mode {mode} is ignored", err=True)
    if not root.is_dir():
        raise click.UsageError(f"--root {root} is not a directory")
    explicit = _given(ctx, "root")
    root, cwd = workspace_for(root, explicit=explicit)
    if resume:
        resume, root, cwd = resumed_workspace(resume, root, cwd, explicit=explicit)
    if cwd:
        click.echo(f"kiln: workspace is the repository root {root} (cwd: {cwd})", err=True)
    opts = RunOptions(
        task=task,
        root=root,
        cwd=cwd,
        output_format=output_format,
        mode=mode,
        ci=ci,
        verify=verify,
        max_steps=max_steps,
        max_minutes=max_minutes,
        max_cost_usd=max_cost_usd,
        commit_branch=commit_branch,
        commit_partial=commit_partial,
        author=author,
        artifacts=Path(os.path.abspath(artifacts)) if artifacts else None,  # links: artifacts.py
        resume=resume,
        provider=provider,
        model=model,
        assume_yes=assume_yes,
        no_sandbox=no_sandbox,
        patch_limits=Limits(max_bytes=int(max_patch_mb * 1024 * 1024)),
    )
    from lsp_server.headless.render import whole_writes
    from lsp_server.headless.workflow_commands import guarded

    whole_writes()
    with guarded(stdout=output_format == "text", stderr=False):  # stderr: cli.workflow_log
        run_or_exit(opts)
