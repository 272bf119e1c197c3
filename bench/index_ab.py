"""A full index's CPU in two checkouts of Kiln, measured side by side; prints figures, asserts
nothing.

    python bench/index_ab.py --before DIR --after DIR --corpus PATH [--passes 2]

``index_stages.py`` run twice, minutes apart, on a host shared with other jobs gives figures
that differ by more than most changes do. Here each checkout runs in a process of its own and
the two are driven batch by batch in turn (the order swapped every batch), so a change of load
on the host falls on both alike. For each checkout, summed over ``--passes`` passes over the
corpus, as multiples of its own tree-sitter parse of the same batches:
  * worker: what the parse workers do per batch (``pipeline._prepare_many``, results pickled)
  * write: the writer's work per batch (unpickling, ``store.write_file``, one commit a batch)
  * history: in a git checkout, the commits of ``HEAD`` recorded as a full run records them
    (``history.start`` and ``history.finish``: the log parsed, the history tables written; the
    ``git log`` process's own CPU is not counted), once per pass before the compact
  * compact: the FTS segments merged down to one at the end (``indexer/compact.py``)
and the ceiling with two free cores, 2 / (worker + write + compact). Both checkouts parse the
same batches with the same tree-sitter, so each stage's CPU-seconds are also compared directly
(after / before): that figure does not carry the parse's own noise (a few per cent).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
import time
from multiprocessing import Pipe, Process
from multiprocessing.connection import Connection
from pathlib import Path

STAGES = ("parse", "worker", "write", "history", "compact")


def _child(tree: str, corpus: str, conn: Connection) -> None:
    """Serve one checkout: each request runs one stage on one batch and answers its CPU time."""
    sys.path.insert(0, tree)
    from indexer import compact, history, schema, store
    from indexer.files import walk
    from indexer.languages import grammar, language_for, new_parser
    from indexer.pipeline import _batches, _prepare_many

    cands = [c for c in walk(Path(corpus)) if not c.rel.startswith(".kiln/")]
    args = [(c.rel, str(c.path), None) for c in cands]
    batches = list(_batches(args, [c.size for c in cands]))
    conn.send(len(batches))
    parsers: dict[str, object] = {}
    sent: dict[int, bytes] = {}
    db = None
    with tempfile.TemporaryDirectory(prefix="kiln-ab-") as tmp:
        while True:
            stage, k = conn.recv()
            if stage == "quit":
                break
            if stage == "open":  # a fresh index for this pass
                if db is not None:
                    db.close()
                path = Path(tmp) / f"index-{time.monotonic_ns()}.db"
                db = schema.connect(path, 5.0)
                schema.migrate(db)
                db.execute("PRAGMA synchronous=OFF")  # as a bulk run writes
                conn.send(0.0)
                continue
            spent = 0.0
            c = time.process_time()
            if stage == "parse":
                for rel, file, _ in batches[k]:
                    lang = language_for(rel)
                    if grammar(lang) is None:
                        continue
                    parser = parsers.get(lang) or parsers.setdefault(lang, new_parser(lang))
                    data = Path(file).read_bytes()
                    c = time.process_time()
                    parser.parse(data)  # type: ignore[attr-defined]
                    spent += time.process_time() - c
                conn.send(spent)
                continue
            if stage == "worker":
                sent[k] = pickle.dumps(_prepare_many(batches[k]), -1)
            elif stage == "write":
                db.execute("BEGIN")  # type: ignore[union-attr]
                for rel, _, prepared, size, h in pickle.loads(sent.pop(k)):
                    if prepared is not None:
                        store.write_file(db, rel, language_for(rel), 0, size, h, prepared)
                db.execute("COMMIT")  # type: ignore[union-attr]
            elif stage == "history":
                reading = history.start(db, Path(corpus))  # type: ignore[arg-type]
                if reading is not None:
                    history.finish(db, reading)  # type: ignore[arg-type]
            elif stage == "compact":
                more = True
                while more:
                    db.execute("BEGIN")  # type: ignore[union-attr]
                    more = any([compact.merge_all(db, t) for t in compact.TABLES])
                    db.execute("COMMIT")  # type: ignore[union-attr]
            conn.send(time.process_time() - c)
        if db is not None:
            db.close()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--before", type=Path, required=True, help="a checkout of Kiln")
    ap.add_argument("--after", type=Path, required=True, help="another checkout of Kiln")
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    for tree in (args.before, args.after):
        if not (tree / "indexer" / "pipeline.py").is_file():
            sys.exit(f"index_ab: not a Kiln checkout: {tree}")
    if not args.corpus.is_dir():
        sys.exit(f"index_ab: not a folder: {args.corpus}")
    trees = (str(args.before.resolve()), str(args.after.resolve()))
    pipes, procs = [], []
    for tree in trees:
        mine, theirs = Pipe()
        proc = Process(target=_child, args=(tree, str(args.corpus), theirs), daemon=True)
        proc.start()
        pipes.append(mine)
        procs.append(proc)
    count = [p.recv() for p in pipes][0]
    cpu = {(stage, i): 0.0 for stage in STAGES for i in (0, 1)}
    for n in range(max(1, args.passes)):
        for stage in ("parse", "worker", "open", "write", "history", "compact"):
            for k in [0] if stage in ("open", "history", "compact") else range(count):
                for i in (0, 1) if (k + n) % 2 == 0 else (1, 0):
                    pipes[i].send((stage, k))
                    spent = pipes[i].recv()
                    if stage != "open":
                        cpu[(stage, i)] += spent
    print(f"corpus {args.corpus}, {count} batches, {args.passes} passes")
    for i, tree in enumerate(trees):
        parse = cpu[("parse", i)]
        x = {stage: cpu[(stage, i)] / parse for stage in STAGES[1:]}
        total = sum(x.values())
        print(
            f"{tree}: parse {parse:.2f} CPU-s; worker {cpu[('worker', i)]:.2f} CPU-s"
            f" {x['worker']:.2f}x  write {cpu[('write', i)]:.2f} CPU-s {x['write']:.2f}x"
            f"  history {cpu[('history', i)]:.2f} CPU-s {x['history']:.2f}x  compact {x['compact']:.2f}x  total {total:.2f}x  ceiling {2 / total:.2f}x"
        )
    ratios = "  ".join(
        f"{stage} {cpu[(stage, 1)] / cpu[(stage, 0)]:.3f}" for stage in STAGES if cpu[(stage, 0)]
    )
    print(f"after / before, CPU-s per stage: {ratios}")
    for pipe, proc in zip(pipes, procs, strict=True):
        pipe.send(("quit", 0))
        proc.join()


if __name__ == "__main__":
    main()
