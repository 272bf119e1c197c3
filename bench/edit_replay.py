"""Replay ``index_speed.py --only-typing``'s edits on a copy of a built index, in CPU time per
phase: where an edit's and its search's time goes. Prints figures, asserts nothing.

    python bench/edit_replay.py --corpus /tmp/repos/sqlalchemy --work /tmp/edit-replay [--phases]

The first run copies the corpus (its ``.git`` too, for the history signal) to ``WORK/base`` and
indexes it; every run copies that index to ``WORK/run`` (without ``.git``) and types the same
90 statement lines as the bench (three largest modules, 30 edits each, seed 7), each followed by
a search for the typed name. ``--phases`` times the steps of ``update_file`` and of the search
(the step's own CPU time, callees included), which costs some CPU of its own; compare runs of
two checkouts alternately (``--checkout``: the tree whose ``indexer`` is imported). ``--hits
FILE`` writes every search's hits and scores (``repr``), so that two checkouts' files can be
compared: equal files mean an edit session searched the same, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

PHASES = {  # module (under indexer) -> functions timed with --phases
    "index": ["chunk_edit", "digest", "excluded"],
    "store": ["write_splice", "prepare"],
    "filelist": ["spliced", "candidates"],
    "ranking": [
        "_lexical",
        "rescore",
        "_meta",
        "_seeds",
        "graph_rank",
        "_add_history",
        "verbatim_blocks",
        "generated_files",
    ],
}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def timed(module: Any, name: str, spent: dict[str, float]) -> None:
    """Wrap ``module.name`` so that each call adds its thread CPU time to ``spent[name]``."""
    fn = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.thread_time() - started

    setattr(module, name, wrapper)


def plans(idx: Any, root: Path, large: int, edits: int, seed: int) -> list[tuple]:
    """The bench's typing plan: (path, text, spots) for the ``large`` largest modules."""
    from bench.index_speed import typing_plans

    return typing_plans(idx, root, random.Random(seed), large, edits)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True, help="base index and run copy go here")
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the indexer to import")
    ap.add_argument("--phases", action="store_true", help="time the steps (costs some CPU)")
    ap.add_argument("--large", type=int, default=3)
    ap.add_argument("--typing", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--hits", type=Path, default=None, help="write every search's hits here")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"edit_replay: not a folder: {args.corpus}")
    sys.path[:0] = [str(args.checkout), str(ROOT)]
    import indexer
    from indexer import Index, filelist, ranking, store
    from indexer import index as index_module

    base, run = args.work / "base", args.work / "run"
    if not (base / ".kiln" / "index.db").exists():
        shutil.rmtree(base, ignore_errors=True)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".kiln")
        shutil.copytree(args.corpus, base, ignore=ignore, symlinks=True)
        with Index(base) as built:
            built.update()
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(base, run, ignore=shutil.ignore_patterns(".git"), symlinks=True)

    spent: dict[str, float] = defaultdict(float)
    if args.phases:
        modules = {"index": index_module, "store": store, "filelist": filelist, "ranking": ranking}
        for module, names in PHASES.items():
            for name in names:
                if hasattr(modules[module], name):  # an older checkout may lack a step
                    timed(modules[module], name, spent)
    records: list[dict[str, float]] = []
    found: list[list] = []
    misses = 0
    with Index(run) as idx:
        for rel, text, spots in plans(idx, run, args.large, args.typing, args.seed):
            lines = text.split("\n")
            idx.update_file(rel, text)  # the editor opens the file
            for n, (i, indent) in enumerate(spots):
                marker = f"kiln_typed_{n}_{len(lines)}"
                lines.insert(i, f"{indent}{marker} = {n}")
                spent.clear()
                started = time.thread_time()
                idx.update_file(rel, "\n".join(lines))
                updated = time.thread_time()
                hits = idx.search(marker, 10)
                done = time.thread_time()
                misses += not any(
                    h.path == rel and h.start_line <= i + 1 <= h.end_line for h in hits
                )
                record = {"edit -> searchable": done - started, "update_file": updated - started}
                record["search"] = done - updated
                record.update(spent)
                records.append({k: v * 1000 for k, v in record.items()})
                found.append(
                    [marker, [[h.path, h.start_line, h.name, repr(h.score)] for h in hits]]
                )
            idx.update_file(rel, text)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"indexer from {Path(indexer.__file__).parent}; {len(records)} edits, {misses} not found;"
        f" load average {load} (1, 5, 15 min) at the end"
    )
    if args.hits is not None:
        args.hits.write_text(json.dumps(found, indent=0), encoding="utf-8")
    for key in dict.fromkeys(k for r in records for k in r):
        values = [r.get(key, 0.0) for r in records]
        print(
            f"  {key:20s} cpu p50 {pct(values, 50):6.2f} ms  p95 {pct(values, 95):6.2f} ms"
            f"  mean {statistics.mean(values):6.2f}"
        )


if __name__ == "__main__":
    main()
