"""How close a full index could come to the parse if its Python cost nothing; prints figures,
asserts nothing.

    python bench/index_floor.py --corpus PATH [--repeat 2]

A full index is tree-sitter parsing plus work the index exists for. Part of that work runs in
C whatever the Python around it does: the query over each tree, SQLite's B-tree inserts and
FTS5's tokenizing of the rows, the FTS merge, ``git log`` for the history signal. This bench
splits the CPU of one process's run over the corpus into those parts and the Python around
them (least CPU of ``--repeat`` runs, as multiples of the parse):
  * parse: tree-sitter parsing alone (the baseline of ``index_speed.py``)
  * query: the language query's ``QueryCursor.matches`` over each parsed tree
  * worker python: the rest of a worker's job (read, hash, chunker, rows, pickling), with a
    worker's garbage-collector thresholds
  * sql <table>: each statement the writer runs, timed around the SQLite call alone, with
    its parameters already built (``store.write_file``, then ``history.finish``); ``sql
    commits``: BEGIN and COMMIT, one transaction per batch (FTS5 writes a batch's segment
    when it commits)
  * writer python: the writer's work around those calls (unpickling, building parameters)
  * compact: the FTS segments merged down to one, as a bulk run ends
  * git: the ``git log`` process ``history.start`` runs (in a git checkout)
With two free cores a full index runs at most at 2 / total times the parse; the last line
gives the same bound with every Python part at zero (C and SQLite only).
"""

from __future__ import annotations

import argparse
import gc
import pickle
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: this checkout

from bench.index_stages import merge_down  # noqa: E402
from indexer import history, schema, store  # noqa: E402
from indexer.files import walk  # noqa: E402
from indexer.languages import grammar, language_for, new_parser  # noqa: E402
from indexer.pipeline import WORKER_GC_THRESHOLD, _batches, _prepare_many  # noqa: E402


class TimedConnection:
    """A connection whose ``execute``/``executemany`` calls are timed by target table; the
    parameters are built before the clock starts (a generator would count its Python)."""

    def __init__(self, conn, cpu: dict[str, float]) -> None:  # type: ignore[no-untyped-def]
        self.conn = conn
        self.cpu = cpu

    def execute(self, sql: str, params=()):  # type: ignore[no-untyped-def]
        c = time.process_time()
        try:
            return self.conn.execute(sql, params)
        finally:
            self.cpu["sql " + _table(sql)] += time.process_time() - c

    def executemany(self, sql: str, rows):  # type: ignore[no-untyped-def]
        rows = list(rows)
        c = time.process_time()
        try:
            return self.conn.executemany(sql, rows)
        finally:
            self.cpu["sql " + _table(sql)] += time.process_time() - c


def _table(sql: str) -> str:
    if sql.split(None, 1)[0].upper() in ("BEGIN", "COMMIT", "ROLLBACK"):
        return "commits"
    words = sql.replace("(", " ").split()
    upper = [w.upper() for w in words]
    for key in ("INTO", "FROM", "UPDATE"):
        if key in upper:
            name = words[upper.index(key) + 1]
            return "history" if name.startswith("commit") else name
    return "other"


def one_run(files: list[tuple[str, str, str]], corpus: Path) -> dict[str, float]:
    import tree_sitter as ts

    cpu: dict[str, float] = defaultdict(float)
    parsers: dict[str, object] = {}
    for _, lang, path in files:
        g = grammar(lang)
        if g is None:
            continue
        parser = parsers.get(lang) or parsers.setdefault(lang, new_parser(lang))
        data = Path(path).read_bytes()
        c = time.process_time()
        tree = parser.parse(data)  # type: ignore[attr-defined]
        cpu["parse"] += time.process_time() - c
        c = time.process_time()
        list(ts.QueryCursor(g.query).matches(tree.root_node))
        cpu["query"] += time.process_time() - c
    args = [(rel, path, None) for rel, _, path in files]
    sizes = [Path(path).stat().st_size for _, _, path in files]
    default = gc.get_threshold()
    gc.set_threshold(*WORKER_GC_THRESHOLD)  # as in a parse worker (``pipeline._after_fork``)
    c = time.process_time()
    sent = [pickle.dumps(_prepare_many(b), -1) for b in _batches(args, sizes)]
    cpu["worker python"] = time.process_time() - c - cpu["parse"] - cpu["query"]
    gc.set_threshold(*default)  # the writer is the caller's process: its own settings
    with tempfile.TemporaryDirectory(prefix="kiln-floor-") as tmp:
        conn = schema.connect(Path(tmp) / "index.db", 5.0)
        schema.migrate(conn)
        conn.execute("PRAGMA synchronous=OFF")  # as a bulk run writes
        timed = TimedConnection(conn, cpu)
        c = time.process_time()
        for batch in sent:
            timed.execute("BEGIN")
            for rel, _, prepared, size, h in pickle.loads(batch):
                if prepared is not None:
                    store.write_file(timed, rel, language_for(rel), 0, size, h, prepared)  # type: ignore[arg-type]
            timed.execute("COMMIT")  # FTS5 writes its batch's segment here
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        reading = history.start(conn, corpus)
        if reading is not None:
            reading.done()
            history.finish(timed, reading)  # type: ignore[arg-type]
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent = time.process_time() - c
        cpu["git"] = (after.ru_utime + after.ru_stime) - (kids.ru_utime + kids.ru_stime)
        cpu["writer python"] = spent - sum(v for k, v in cpu.items() if k.startswith("sql "))
        c = time.process_time()
        merge_down(conn)
        cpu["compact"] = time.process_time() - c
        conn.close()
    return cpu


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"index_floor: not a folder: {args.corpus}")
    files = [
        (cand.rel, language_for(cand.rel), str(cand.path))
        for cand in walk(args.corpus)
        if not cand.rel.startswith(".kiln/")
    ]
    best: dict[str, float] = {}
    for _ in range(max(1, args.repeat)):
        for stage, seconds in one_run(files, args.corpus.resolve()).items():
            best[stage] = min(best.get(stage, seconds), seconds)
    parse = best["parse"]
    print(f"corpus        {args.corpus}  ({len(files)} files)")
    for stage, seconds in sorted(best.items(), key=lambda kv: (kv[0] != "parse", -kv[1])):
        print(f"{stage:24s} {seconds:6.2f} CPU-s  {seconds / parse:5.2f}x parse")
    total = sum(best.values())
    floor = sum(v for k, v in best.items() if "python" not in k)
    print(
        f"total {total / parse:.2f}x parse: with two free cores at most {2 * parse / total:.2f}x "
        f"the parse; C and SQLite alone {floor / parse:.2f}x: at most {2 * parse / floor:.2f}x "
        "even if no Python ran"
    )


if __name__ == "__main__":
    main()
