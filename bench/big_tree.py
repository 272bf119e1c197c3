"""A large tree: several checkouts side by side, indexed from scratch; prints figures, asserts
nothing.

    python -m bench.big_tree --source /tmp/repos/sqlalchemy --source ... [--mb 300]
        [--queries 200] [--keep DIR]

Each ``--source`` folder's working tree (no ``.git``, ``.kiln``, ``__pycache__`` or
``site-packages``) is copied side by side into a temp folder, in the order given, as
``<name>``, then ``<name>-2``, ``<name>-3``... until the tree holds ``--mb`` megabytes. Measured in the same run:
  * tree size on disk and the bytes of code a grammar covers
  * baseline: tree-sitter parsing those files alone, one process (MB/s)
  * full index: wall time, MB/s, ratio to the baseline; CPU seconds of all processes
  * peak memory while indexing, sampled from /proc every 100 ms: the sum of the RSS of this
    process and its parse workers at one instant (pages they share are counted in each),
    the same as PSS (shared pages split between them), and the largest single process
  * query latency over identifiers and phrases taken from the index (p50/p95 ms)
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

from bench.index_speed import cpu_split, parse_baseline, pct, time_queries
from bench.proc_memory import MemorySampler
from indexer import Index

IGNORED = shutil.ignore_patterns(".git", ".kiln", "__pycache__", "*.pyc", "site-packages")


def tree_bytes(root: Path) -> int:
    total = 0
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def build_tree(sources: list[Path], root: Path, limit: int) -> list[str]:
    """Copies of ``sources`` side by side under ``root`` until it holds ``limit`` bytes."""
    made: list[str] = []
    total = 0
    for round_ in range(1, 100):
        for src in sources:
            name = src.name if round_ == 1 else f"{src.name}-{round_}"
            shutil.copytree(src, root / name, ignore=IGNORED, symlinks=True)
            made.append(name)
            total += tree_bytes(root / name)
            if total >= limit:
                return made
    return made


def queries_from(idx: Index, n: int, rng: random.Random) -> list[str]:
    """Identifiers (every other query) and their words plus "function", from the index."""
    names = [
        r[0]
        for r in idx._reader().execute(
            "SELECT name FROM blocks WHERE kind IN ('function', 'method', 'class') "
            "AND name NOT LIKE '%, %' ORDER BY id"
        )
    ]
    rows = [(name,) for name in rng.sample(names, min(n, len(names)))]
    out = []
    for j, (name,) in enumerate(rows):
        short = name.rsplit(".", 1)[-1]
        words = " ".join(p for p in short.replace("_", " ").split() if p)
        out.append(short if j % 2 else f"{words} function")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--source", type=Path, action="append", required=True)
    ap.add_argument("--mb", type=float, default=300.0, help="tree size to reach (MB on disk)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", type=Path, help="build the tree here and keep it (an empty folder)")
    args = ap.parse_args()
    for src in args.source:
        if not src.is_dir():
            sys.exit(f"big_tree: not a folder: {src}")
    if not sys.platform.startswith("linux"):
        sys.exit("big_tree: reads memory from /proc (Linux only)")
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        sys.exit(f"big_tree: --keep folder is not empty: {args.keep}")

    with tempfile.TemporaryDirectory(prefix="kiln-big-") as tmp:
        root = args.keep or Path(tmp) / "tree"
        root.mkdir(parents=True, exist_ok=True)
        made = build_tree(args.source, root, int(args.mb * 1e6))
        size = tree_bytes(root)
        print(f"tree              {size / 1e6:.0f} MB on disk: {', '.join(made)}")
        base_rate, code_bytes, base_cpu_rate = parse_baseline(root)
        print(
            f"baseline parse    {base_rate:6.2f} MB/s  ({code_bytes / 1e6:.1f} MB of code with a "
            f"grammar; tree-sitter alone, 1 process; {base_cpu_rate:.2f} MB per CPU-s)"
        )
        load = os.getloadavg()
        idx = Index(root)
        own_before, kids_before = cpu_split()
        with MemorySampler(os.getpid()) as mem:
            stats = idx.update()
        own, kids = cpu_split()
        own, kids = own - own_before, kids - kids_before - mem.cpu  # the sampler: not ours
        cpu = own + kids
        code_seconds = code_bytes / 1e6 / base_rate
        print(
            f"full index        {stats.bytes / 1e6 / stats.seconds:6.2f} MB/s  ({stats.bytes / 1e6:.1f} MB in "
            f"{stats.files_indexed} files, {stats.blocks} blocks, {stats.seconds:.1f} s; the "
            f"baseline parsed the code in {code_seconds:.1f} s: {code_seconds / stats.seconds:.2f}x)"
        )
        print(
            f"cpu               {cpu:6.1f} s over all processes  ({stats.bytes / 1e6 / cpu:.2f} MB "
            f"per CPU-s; load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after)"
        )
        print(
            f"  split           {own:6.1f} s in this process (walk, SQLite/FTS5 writes), {kids:.1f} s "
            f"in the workers (read, parse, chunk, rows); parse alone {code_bytes / 1e6 / base_cpu_rate:.1f} s"
        )
        print(
            f"peak memory       {mem.peak_rss / 1024:6.0f} MB RSS summed over {mem.peak_procs} "
            f"processes ({mem.peak_pss / 1024:.0f} MB PSS; largest process {mem.peak_one / 1024:.0f} MB)"
        )
        print(f"db                {idx.status()['db_bytes'] / 1e6:6.0f} MB")
        rng = random.Random(args.seed)
        times, cpu_ms = time_queries(idx, queries_from(idx, args.queries, rng))
        print(
            f"query             p50 {pct(times, 50):6.1f} ms  p95 {pct(times, 95):6.1f} ms  "
            f"({len(times)} queries; CPU p50 {pct(cpu_ms, 50):.1f}, p95 {pct(cpu_ms, 95):.1f} ms; "
            f"load average {os.getloadavg()[0]:.1f})"
        )
        idx.close()


if __name__ == "__main__":
    main()
