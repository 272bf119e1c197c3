"""How a full index uses the cores: when each parse worker was busy, and what the writer did
meanwhile; prints figures, asserts nothing.

    python bench/index_timeline.py --corpus PATH [--repeat 1]

The corpus is copied to a temp folder (with its ``.git``: the history is part of a full run) and
indexed by ``Index.update`` of this checkout. Each batch a worker prepares
(``pipeline._prepare_many``) is timed in the worker (wall clock, and the worker's CPU), and the
writer's history transaction in the parent; printed per worker: batches, busy time (inside
batches), idle time between its first and last batch, the longest idle gap and when it began,
the time spent sending results back (``_sendback_result``: pickling and the pipe), and when
its first batch began and its last ended (before the first: the walk of the tree, git started).
An idle gap while the writer records the history means the workers ran out of submitted work.
"""

from __future__ import annotations

import argparse
import concurrent.futures.process as cfp
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: this checkout

from indexer import Index  # noqa: E402
from indexer import pipeline as pl  # noqa: E402

SPANS = Path(tempfile.mkdtemp(prefix="kiln-timeline-"))


def _log(kind: str, start: float, end: float, cpu: float = 0.0) -> None:
    with open(SPANS / f"{os.getpid()}.jsonl", "a") as fh:
        fh.write(json.dumps([kind, start, end, cpu]) + "\n")


def _timed(inner, kind):  # type: ignore[no-untyped-def]
    def run(*args, **kwargs):  # type: ignore[no-untyped-def]
        t, c = time.time(), time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            _log(kind, t, time.time(), time.thread_time() - c)

    return run


_PREPARE = pl._prepare_many


def _batch(args: list) -> list:
    """``pipeline._prepare_many``, timed (module-level: the pool sends it by name)."""
    t, c = time.time(), time.thread_time()
    try:
        return _PREPARE(args)
    finally:
        _log("batch", t, time.time(), time.thread_time() - c)


def one_run(corpus: Path) -> None:
    for f in SPANS.iterdir():
        f.unlink()
    with tempfile.TemporaryDirectory(prefix="kiln-timeline-") as tmp:
        root = Path(tmp) / "corpus"
        shutil.copytree(
            corpus, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".kiln")
        )
        idx = Index(root)
        load = os.getloadavg()[0]
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0, c0 = time.time(), time.process_time()
        stats = idx.update()
        wall, cpu = time.time() - t0, time.process_time() - c0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        idx.close()
    kid_cpu = (after.ru_utime + after.ru_stime) - (kids.ru_utime + kids.ru_stime)
    print(
        f"{corpus.name}: {stats.files_indexed} files, {stats.commits} commits in {wall:.2f} s; "
        f"parent {cpu:.2f} CPU-s, workers and git {kid_cpu:.2f} CPU-s; load {load:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after"
    )
    own = str(os.getpid())
    for f in sorted(SPANS.iterdir()):
        spans = [json.loads(line) for line in f.read_text().splitlines()]
        if f.stem == own:
            for kind, start, end, c in spans:
                print(f"  writer   {kind}: {start - t0:6.2f} -> {end - t0:6.2f} s ({c:.2f} CPU-s)")
            continue
        batches = sorted((s, e, c) for kind, s, e, c in spans if kind == "batch")
        sent = sum(e - s for kind, s, e, _ in spans if kind == "send")
        if not batches:
            continue
        gaps = [(b[0] - a[1], a[1]) for a, b in zip(batches, batches[1:], strict=False)]
        idle = sum(g for g, _ in gaps)
        longest = max(gaps, default=(0.0, t0))
        print(
            f"  worker   {len(batches)} batches, busy {sum(e - s for s, e, _ in batches):6.2f} s "
            f"({sum(c for *_, c in batches):.2f} CPU-s), idle between batches {idle:5.2f} s, "
            f"longest gap {longest[0]:.2f} s at {longest[1] - t0:.2f} s, "
            f"sending results {sent:.2f} s, batches from {batches[0][0] - t0:.2f} to "
            f"{batches[-1][1] - t0:.2f} s"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"index_timeline: not a folder: {args.corpus}")
    pl._prepare_many = _batch  # type: ignore[assignment]  # the workers are forked: they see it
    cfp._sendback_result = _timed(cfp._sendback_result, "send")
    Index._finish_history = _timed(Index._finish_history, "history")
    try:
        for _ in range(max(1, args.repeat)):
            one_run(args.corpus)
    finally:
        shutil.rmtree(SPANS, ignore_errors=True)


if __name__ == "__main__":
    main()
