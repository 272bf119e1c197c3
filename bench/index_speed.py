"""Index speed benchmark: prints figures, asserts nothing.

    python bench/index_speed.py --corpus PATH [--queries 200] [--edits 40]

The corpus is copied to a temp folder (the index lives in ``<root>/.kiln``). Measured in the
same run, so ratios are comparable across machines:
  * baseline: tree-sitter parsing alone, one process (MB/s)
  * full index: walk + parse + chunk + SQLite/FTS5 writes (MB/s, ratio to the baseline)
  * no-change rescan (seconds)
  * one changed file searchable: update_file(path, text) + a search that finds the new symbol,
    for a file's first edit (full parse) and its next one (incremental parse), p50/p95 ms
  * typing inside function bodies of the largest modules (--large N): a new statement line
    per edit, edit -> searchable p50/p95 (update_file + a search that finds the new name; and
    update_file alone), against the same edits with the whole file re-chunked (the previous
    behaviour: incremental parse, full chunk); --only-typing skips the other measurements
  * query latency over identifiers and phrases taken from the corpus (p50/p95 ms); in a git
    checkout also over commit subjects, with the history signal's own cost (reading the log)
  * CPU cost: MB per CPU-second over all processes (robust to other load on the machine)
  * peak memory while indexing (RSS and PSS summed over the processes, sampled from /proc),
    and at the end ru_maxrss of this process and of the largest parse worker
--only-index stops after the full index (and the git history's own time).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: this checkout

from bench.proc_memory import MemorySampler  # noqa: E402
from indexer import Index  # noqa: E402
from indexer.files import walk  # noqa: E402
from indexer.languages import language_for, new_parser  # noqa: E402


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def time_queries(idx: Index, queries: list[str]) -> tuple[list[float], list[float]]:
    """Each query's wall-clock and CPU milliseconds for ``idx.search(q, 10)``."""
    wall: list[float] = []
    cpu: list[float] = []
    for q in queries:
        t, c = time.perf_counter(), time.process_time()
        idx.search(q, 10)
        wall.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    return wall, cpu


def cpu_seconds() -> float:
    """User + system time of this process and its finished children (the parse workers)."""
    return sum(cpu_split())


def cpu_split() -> tuple[float, float]:
    """(this process, its finished children) user + system seconds."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def parse_baseline(root: Path) -> tuple[float, int, float]:
    parsers: dict[str, object] = {}
    total = 0
    elapsed = cpu = 0.0
    for cand in walk(root):
        lang = language_for(cand.rel)
        if lang == "text":
            continue
        data = cand.path.read_bytes()
        parser = parsers.get(lang) or parsers.setdefault(lang, new_parser(lang))
        t, c = time.perf_counter(), time.process_time()
        parser.parse(data)  # type: ignore[attr-defined]
        elapsed += time.perf_counter() - t
        cpu += time.process_time() - c
        total += len(data)
    return total / 1e6 / elapsed, total, total / 1e6 / cpu


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, default=Path(sysconfig.get_path("stdlib")))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--large", type=int, default=3, help="largest modules typed in")
    ap.add_argument("--typing", type=int, default=30, help="edits per large module")
    ap.add_argument(
        "--only-typing", action="store_true", help="index, then measure typing in bodies only"
    )
    ap.add_argument(
        "--only-index", action="store_true", help="the parse baseline and the full index only"
    )
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"index_speed: not a folder: {args.corpus}")
    rng = random.Random(args.seed)

    with tempfile.TemporaryDirectory(prefix="kiln-bench-") as tmp:
        root = Path(tmp) / "corpus"
        shutil.copytree(
            args.corpus,
            root,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".kiln"),
            symlinks=True,
        )
        base_rate, code_bytes, base_cpu_rate = parse_baseline(root)
        print(
            f"corpus            {args.corpus}  ({code_bytes / 1e6:.1f} MB of code with a grammar)"
        )
        print(f"baseline parse    {base_rate:6.2f} MB/s  (tree-sitter alone, 1 process)")

        idx = Index(root)
        load = os.getloadavg()[0]
        own_before, kids_before = cpu_split()
        with MemorySampler(os.getpid()) as mem:
            stats = idx.update()
        own, kids = cpu_split()
        own, kids = own - own_before, kids - kids_before - mem.cpu  # the sampler: not ours
        cpu = own + kids
        rate = stats.bytes / 1e6 / stats.seconds
        status = idx.status()
        print(
            f"full index        {rate:6.2f} MB/s  ({stats.bytes / 1e6:.1f} MB, {stats.files_indexed} files, "
            f"{stats.blocks} blocks in {stats.seconds:.1f}s; {rate / base_rate:.2f}x baseline; "
            f"db {status['db_bytes'] / 1e6:.0f} MB)"
        )
        # CPU time is what a loaded machine cannot distort: MB per CPU-second, all processes.
        cores = min(2, os.cpu_count() or 1)
        print(
            f"cpu cost          {stats.bytes / 1e6 / cpu:6.2f} MB per CPU-s  (baseline {base_cpu_rate:.2f}; "
            f"with {cores} free cores the wall-clock ceiling is {stats.bytes / 1e6 / cpu * cores:.2f} MB/s, "
            f"{stats.bytes / 1e6 / cpu * cores / base_cpu_rate:.2f}x the parse; load average "
            f"{load:.1f} before, {os.getloadavg()[0]:.1f} after)"
        )
        print(
            f"  split           {own:6.2f} s in this process (walk, SQLite/FTS5 writes), {kids:.2f} s "
            f"in workers and git (read, parse, chunk, rows); parse alone {code_bytes / 1e6 / base_cpu_rate:.2f} s"
        )
        print(
            f"index memory      {mem.peak_rss / 1024:6.0f} MB RSS summed over {mem.peak_procs} processes "
            f"({mem.peak_pss / 1024:.0f} MB PSS; largest process {mem.peak_one / 1024:.0f} MB)"
        )
        if stats.commits:
            idx._conn.execute("DELETE FROM meta WHERE key = 'history_head'")  # forces a re-read
            t = time.perf_counter()
            idx.sync_history()
            print(
                f"git history       {time.perf_counter() - t:6.2f} s    ({stats.commits} commits read "
                f"and indexed, part of the full index above)"
            )
        if args.only_index:
            idx.close()
            return
        if args.only_typing:
            typing_in_bodies(idx, root, rng, args.large, args.typing)
            idx.close()
            return
        t = time.perf_counter()
        again = idx.update()
        print(
            f"no-change rescan  {time.perf_counter() - t:6.2f} s    ({again.files_seen} files, {again.files_indexed} re-parsed)"
        )

        rows = (
            idx._reader()
            .execute(
                "SELECT path, name, kind FROM blocks WHERE kind IN ('function','method','class') AND language='python'"
            )
            .fetchall()
        )
        py_files = sorted({r[0] for r in rows})
        # Two edits per file: the first parses the whole file, the next (the usual didChange)
        # re-parses incrementally from the tree the first one left.
        wall: dict[int, list[float]] = {0: [], 1: []}
        cpu: dict[int, list[float]] = {0: [], 1: []}
        misses = 0
        for i, rel in enumerate(rng.sample(py_files, min(args.edits, len(py_files)))):
            text = (root / rel).read_text("utf-8", errors="replace")
            for round_ in (0, 1):
                marker = f"bench_marker_symbol_{i}_{round_}"
                t, c = time.perf_counter(), time.process_time()
                idx.update_file(rel, text + f"\n\ndef {marker}():\n    return {i}\n")
                hits = idx.search(marker, 1)
                wall[round_].append((time.perf_counter() - t) * 1000)
                cpu[round_].append((time.process_time() - c) * 1000)
                misses += not (hits and hits[0].name == marker)
        for round_, label in ((0, "first edit"), (1, "next edit")):
            print(
                f"edit->searchable  {label:10s} p50 {pct(wall[round_], 50):6.1f} ms  p95 {pct(wall[round_], 95):6.1f} ms"
                f"  (cpu p50 {pct(cpu[round_], 50):.1f}, p95 {pct(cpu[round_], 95):.1f} ms)"
            )
        print(
            f"                  {len(wall[0])} files, {misses} of {2 * len(wall[0])} markers not ranked first"
        )

        typing_in_bodies(idx, root, rng, args.large, args.typing)

        sample = rng.sample(rows, min(args.queries, len(rows)))
        queries = []
        for j, (_, name, _) in enumerate(sample):
            short = name.split(", ")[0].rsplit(".", 1)[-1]
            queries.append(
                short
                if j % 2
                else " ".join(p for p in short.replace("_", " ").split() if p) + " function"
            )
        if stats.commits:  # fix-like requests in the project's own words, every third query
            subjects = [
                r[0].splitlines()[0]
                for r in idx._reader().execute("SELECT message FROM commits ORDER BY random()")
                if r[0].strip()
            ]
            for j, subject in enumerate(subjects[: len(queries) // 3]):
                queries[3 * j] = subject
        query_times, query_cpu = time_queries(idx, queries)
        print(
            f"query             p50 {pct(query_times, 50):6.1f} ms  p95 {pct(query_times, 95):6.1f} ms  "
            f"({len(queries)} queries, mean {statistics.mean(query_times):.1f} ms)"
        )
        print(
            f"  cpu time        p50 {pct(query_cpu, 50):6.1f} ms  p95 {pct(query_cpu, 95):6.1f} ms"
        )
        idx.close()
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak memory       {own:6.0f} MB (this process), {kids:.0f} MB (largest parse worker)")


_OPENERS = ("def ", "async def ", "if ", "elif ", "else:", "for ", "while ", "with ", "try:")


def _statement_lines(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """(line index, indentation) of the first statement of a block inside a function body
    (the line after ``if ...:``, ``for ...:``, ``def ...:``), where a new statement line can
    be typed above it and the file still parses."""
    lines = text.split("\n")
    out = []
    for start, end in spans:
        for i in range(start + 1, min(end, len(lines))):  # 0-based: skips the def line
            line, prev = lines[i], lines[i - 1]
            stripped, opener = line.lstrip(), prev.strip()
            indent = len(line) - len(stripped)
            if (
                stripped
                and not stripped.startswith(("#", '"', "'", ")", "]", "}"))
                and opener.endswith(":")
                and opener.startswith(_OPENERS)
                and indent > len(prev) - len(prev.lstrip())
            ):
                out.append((i, line[:indent]))
    return out


def typing_plans(idx: Index, root: Path, rng: random.Random, large: int, edits: int) -> list[tuple]:
    """The typing plan: (path, text, spots) for the ``large`` largest modules, ``edits`` body
    lines of each (bottom first), drawn from ``rng``."""
    files = sorted(
        (p for p in root.rglob("*.py") if ".kiln" not in p.parts),
        key=lambda p: -p.stat().st_size,
    )[:large]
    plans = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        text = path.read_text("utf-8", errors="replace")
        spans = [
            (r[0] - 1, r[1])
            for r in idx._reader().execute(
                "SELECT start_line, end_line FROM blocks WHERE path = ? AND kind IN "
                "('function', 'method') AND end_line - start_line >= 2 AND name NOT LIKE '%, %'",
                (rel,),
            )
        ]
        spots = _statement_lines(text, spans)
        plans.append((rel, text, sorted(rng.sample(spots, min(edits, len(spots))), reverse=True)))
    return plans


def typing_in_bodies(idx: Index, root: Path, rng: random.Random, large: int, edits: int) -> None:
    """New statement lines typed into function bodies of the largest modules, searchable after
    each; then the same edits with the whole file re-chunked (rechunk's splice switched off)."""
    from indexer import rechunk

    plans = typing_plans(idx, root, rng, large, edits)
    real_splice = rechunk._splice
    for label, splice in (("re-chunk the edited function", real_splice), ("whole file", None)):
        if splice is None:
            rechunk._splice = lambda *a, **k: None  # the baseline: every edit chunks the file
        wall: list[float] = []
        cpu: list[float] = []
        update_wall: list[float] = []
        update_cpu: list[float] = []
        misses = 0
        try:
            for rel, text, spots in plans:
                lines = text.split("\n")
                idx.update_file(rel, text)  # the editor opens the file: full parse, cached
                for n, (i, indent) in enumerate(spots):  # bottom-up: line numbers stay valid
                    marker = f"kiln_typed_{n}_{len(lines)}"
                    lines.insert(i, f"{indent}{marker} = {n}")
                    t, c = time.perf_counter(), time.process_time()
                    idx.update_file(rel, "\n".join(lines))
                    update_wall.append((time.perf_counter() - t) * 1000)
                    update_cpu.append((time.process_time() - c) * 1000)
                    hits = idx.search(marker, 10)
                    wall.append((time.perf_counter() - t) * 1000)
                    cpu.append((time.process_time() - c) * 1000)
                    line = i + 1  # found = the block holding the typed line, in the top 10
                    misses += not any(
                        h.path == rel and h.start_line <= line <= h.end_line for h in hits
                    )
                idx.update_file(rel, text)
        finally:
            rechunk._splice = real_splice
        print(
            f"typing in bodies  {label:28s} p50 {pct(wall, 50):6.1f} ms  p95 {pct(wall, 95):6.1f} ms"
            f"  (cpu p50 {pct(cpu, 50):.1f}, p95 {pct(cpu, 95):.1f} ms; {len(wall)} edits in"
            f" {len(plans)} files; the typed line's block not in the top 10: {misses})"
        )
        print(
            f"  update_file alone {'':27s} p50 {pct(update_wall, 50):6.1f} ms  p95 {pct(update_wall, 95):6.1f} ms"
            f"  (cpu p50 {pct(update_cpu, 50):.1f}, p95 {pct(update_cpu, 95):.1f} ms)"
        )
    sizes = ", ".join(f"{(root / rel).stat().st_size / 1e3:.0f} kB" for rel, _, _ in plans)
    print(f"                  files: {', '.join(rel for rel, _, _ in plans)} ({sizes})")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"                  load average {load} (1, 5, 15 min) at the end")


if __name__ == "__main__":
    main()
