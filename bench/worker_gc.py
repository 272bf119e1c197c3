"""A parse worker's CPU with the garbage collector's default thresholds and with the ones
``indexer.pipeline`` gives its workers, measured side by side; prints figures, asserts nothing.

    python bench/worker_gc.py --corpus PATH [--passes 2]

Each batch of files (as a full run cuts them) is prepared (``pipeline._prepare_many``, results
pickled as for the pipe) under each setting in turn, the order swapped every batch, so a change
of load on the host falls on both alike; the CPU-seconds of each setting are summed.
"""

from __future__ import annotations

import argparse
import gc
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: this checkout

from indexer.files import walk  # noqa: E402
from indexer.pipeline import WORKER_GC_THRESHOLD, _batches, _prepare_many  # noqa: E402

SETTINGS = {
    "default (700, 10, 10)": (700, 10, 10),
    f"workers' {WORKER_GC_THRESHOLD}": WORKER_GC_THRESHOLD,
}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"worker_gc: not a folder: {args.corpus}")
    cands = [c for c in walk(args.corpus) if not c.rel.startswith(".kiln/")]
    work = [(c.rel, str(c.path), None) for c in cands]
    batches = list(_batches(work, [c.size for c in cands]))
    for batch in batches:  # warm the per-process caches first: both settings find them full
        _prepare_many(batch)
    cpu = dict.fromkeys(SETTINGS, 0.0)
    names = list(SETTINGS)
    for n in range(max(1, args.passes)):
        for k, batch in enumerate(batches):
            for name in names if (k + n) % 2 == 0 else names[::-1]:
                gc.set_threshold(*SETTINGS[name])
                c = time.process_time()
                pickle.dumps(_prepare_many(batch), -1)
                cpu[name] += time.process_time() - c
    gc.set_threshold(700, 10, 10)
    base = cpu[names[0]]
    for name, seconds in cpu.items():
        print(f"{name:24s} {seconds:7.2f} CPU-s  {seconds / base:.3f}")


if __name__ == "__main__":
    main()
