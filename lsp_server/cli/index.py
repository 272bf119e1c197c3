"""`kiln index` and `kiln search`: build, watch and query a workspace's code index.

Progress goes to stderr (a rich bar, only on a terminal); results and the summary go to stdout,
as text or, with ``--json``, as one JSON document for scripts and editors.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from indexer import Index, IndexCorrupt, IndexStats, IndexUnavailable
from indexer.files import printable
from lsp_server.cli.options import root_option
from lsp_server.cli.query_args import QueryCommand
from lsp_server.headless.terminal import safe, styled_stream

ERRORS_POLL_SECONDS = 0.5  # how often `kiln index --watch` looks for batches that failed
_ROOT = click.Path(exists=True, file_okay=False, dir_okay=True, path_type=Path)


def _json(obj: Any) -> str:
    """One JSON line of valid Unicode: a root or path whose name is not UTF-8 reaches Python
    as lone surrogates (``\\udcff``), which strict JSON readers refuse; its bytes are spelled
    ``\\xff`` instead, as the text output and the index's notices spell them."""
    from agent.transcript import utf8_text

    return json.dumps(utf8_text(obj))


@contextmanager
def _progress() -> Iterator[Callable[[int, int, str], None] | None]:
    """A rich progress bar on stderr when it is a terminal (stdout stays clean for --json);
    otherwise no callback at all."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("indexing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}", style="dim", markup=False),  # a path, not markup
        console=Console(file=styled_stream(sys.stderr), stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def report(done: int, total: int, path: str) -> None:
            bar.update(task, completed=done, total=total, description=safe(path[-60:]))

        yield report


def _summary(stats: IndexStats, idx: Index) -> str:
    status = idx.status()
    rate = stats.bytes / 1e6 / stats.seconds if stats.seconds > 0 else 0.0
    return (
        f"indexed {status['files']} files, {status['blocks']} blocks "
        f"({stats.files_indexed} changed, {stats.files_removed} removed) "
        f"in {stats.seconds:.2f}s, {rate:.1f} MB/s"
        + (f"; {stats.commits} new commits of git history" if stats.commits else "")
    )


def _open(root: Path, *, searching: bool = False) -> Index:
    """The index of ``root``; for a search, an index on a read-only disk too (it failed with
    "cannot open … index.db": a read-only checkout with a built index could not be searched)."""
    where = root.resolve()
    if where == Path(where.anchor):  # `--root "$DIR/"` with DIR unset: the whole machine
        raise click.UsageError(
            f"{root} is the filesystem root, not a project: pass a project folder"
        )
    try:
        idx = Index(root)
    except IndexUnavailable as exc:
        folder = where / ".kiln"
        if not searching or type(exc) is not IndexUnavailable or not _read_only_mount(folder):
            raise
        idx = Index(root, read_only=True)  # nothing can change it: searched as it is
        if idx.status()["last_indexed"] is None:  # unfinished, and it cannot be finished here
            idx.close()
            raise
        click.echo(f"kiln: {folder} is on a read-only disk: searching the index as it is", err=True)
    if idx.recovered:
        click.echo(f"kiln: {idx.recovered}", err=True)
    return idx


def _read_only_mount(folder: Path) -> bool:
    import os

    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _build(idx: Index, *, verbose: bool = False) -> IndexStats:
    """A run; each file it left out is one line on stderr when first met or changed (or with
    ``verbose``), those the last run reported too are counted in one line."""
    with _progress() as report:
        stats = idx.update(report)
    before = set() if verbose else set(stats.skipped_before)
    for line in stats.skipped:
        if line not in before:
            click.echo(f"kiln: skipped {printable(line)}", err=True)
    if before:
        files = "file" if len(before) == 1 else "files"
        click.echo(
            f"kiln: {len(before)} {files} skipped as before (`kiln index --verbose` lists them)",
            err=True,
        )
    return stats


@click.command("index")
@click.argument("path", required=False, default=None, type=_ROOT)
@click.option("--watch", is_flag=True, help="Keep the index fresh until interrupted.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Also list the files left out that an earlier run said already.",
)
def index_cmd(path: Path | None, watch: bool, as_json: bool, verbose: bool) -> None:
    """Build or refresh the code index of PATH (default: the repository holding the current
    folder, the workspace `kiln run` and `kiln search` use there).

    A file left out that a search would miss (too big, a source file that is binary or
    minified, a link out of the tree…) is one line on stderr when first met or changed; a
    later run counts those it finds again in one line (--verbose lists them). Binary data
    and generated files are left out without a word."""
    if path is None:
        from agent.memory import repository_root

        path = repository_root(Path.cwd())
    idx = _open(path)
    try:
        stats = _build(idx, verbose=verbose)
        if as_json:
            status = idx.status()
            rate = stats.bytes / 1e6 / stats.seconds if stats.seconds > 0 else 0.0
            click.echo(
                _json(
                    {
                        **stats.to_dict(),
                        "mb_per_s": round(rate, 3),
                        "root": status["root"],
                        "total_files": status["files"],
                        "total_blocks": status["blocks"],
                        "db_bytes": status["db_bytes"],
                    }
                )
            )
        else:
            click.echo(_summary(stats, idx))
        if watch:
            _watch(idx, as_json, set(stats.skipped))
    finally:
        idx.close()


def _own_output() -> Callable[[Path], bool]:
    """Whether a path is the file this process's stdout or stderr writes to. With
    `kiln index --watch . > index.log` (or nohup.out) the log is inside the watched tree: each
    line printed would change it and start a batch whose line changes it again."""
    import os
    import stat

    own = set()
    for fd in (1, 2):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            own.add((st.st_dev, st.st_ino))

    def is_own(path: Path) -> bool:
        if not own:
            return False
        try:
            st = path.stat()
        except OSError:
            return False
        return (st.st_dev, st.st_ino) in own

    return is_own


def _watch(idx: Index, as_json: bool, said: set[str]) -> None:
    """Follow the disk; a skipped file is said once (``said``: the lines said already)."""
    from indexer import watch as start_watch

    is_own = _own_output()

    def on_batch(paths: list[str], stats: IndexStats) -> None:
        for line in stats.skipped:  # as a run says them; a full scan lists them all again
            if line not in said:
                said.add(line)
                click.echo(f"kiln: skipped {printable(line)}", err=True)
        paths = [p for p in paths if not is_own(idx.root / p)]
        if not paths and not stats.commits:
            return  # only our own output changed: printing would change it again
        if as_json:
            click.echo(_json({"event": "batch", "paths": paths, **stats.to_dict()}))
        else:
            click.echo(
                f"updated {len(paths)} path(s): {stats.blocks} blocks, {stats.files_removed} removed"
                + (f"; {stats.commits} new commits" if stats.commits else "")
            )

    with start_watch(idx.root, on_batch, index=idx, skip=is_own) as watcher:
        if as_json:
            click.echo(_json({"event": "watching", "root": str(idx.root)}))
        else:
            click.echo("watching for changes (Ctrl-C to stop)", err=True)
        told = 0
        try:
            while True:  # a batch that failed (a full disk…) is one line: it said nothing
                time.sleep(ERRORS_POLL_SECONDS)
                for error in watcher.errors[told:]:
                    click.echo(f"kiln: could not update the index: {printable(error)}", err=True)
                told = len(watcher.errors)
        except KeyboardInterrupt:
            pass


@click.command("search", cls=QueryCommand)
@click.argument("query")
@root_option
@click.option(
    "-k", "k", default=10, show_default=True, type=click.IntRange(min=1, max=1000), help="Results."
)
@click.option("--json", "as_json", is_flag=True, help="Print results as a JSON list.")
def search_cmd(query: str, root: Path, k: int, as_json: bool) -> None:
    """Search the code index of the workspace (from a subfolder of a repository: the
    repository's, as `kiln run` works there); builds the index first if none was finished.

    QUERY may start with a dash ("- allow lists"); only the options below are options."""
    from indexer.tokens import query_terms

    if not query.strip():
        raise click.UsageError("the query is empty")
    query.encode("utf-8")  # a byte from a Latin-1 terminal is refused, as `sessions search` does
    idx = _open(root, searching=True)
    try:
        try:
            # No full run has finished yet (none was made, or the first was interrupted and
            # holds some batches only): build (resume) it, or files not yet reached stay unseen.
            built = idx.status()["last_indexed"] is not None
        except IndexCorrupt as exc:
            idx.rebuild(str(exc))
            click.echo(f"kiln: {idx.recovered}", err=True)
            built = False
        if not built:
            _build(idx)
        if not query_terms(query):
            click.echo(
                "kiln: the query has no searchable words (only stop words or punctuation)", err=True
            )
            hits = []
        else:
            try:
                hits = idx.search(query, k)
            except IndexCorrupt as exc:
                idx.rebuild(str(exc))
                click.echo(f"kiln: {idx.recovered}", err=True)
                _build(idx)
                hits = idx.search(query, k)
    finally:
        idx.close()
    if as_json:
        click.echo(_json([h.to_dict() for h in hits]))
        return
    if not hits:
        click.echo("no results", err=True)
    for h in hits:
        click.echo(_line(h))


def _line(h: Any) -> str:
    """One hit in two lines; a path with a newline, a tab or an escape in its name is printed
    escaped, so a file name cannot forge a line of the output (``--json`` has it verbatim)."""
    span = f"{printable(h.path)}:{h.start_line}-{h.end_line}"
    first = h.signature.splitlines()[0] if h.signature else ""
    return f"{span}  {h.kind} {printable(h.name)}  ({h.score:.4f})\n    {printable(first)}"
