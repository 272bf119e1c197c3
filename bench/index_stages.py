"""Where a full index spends its CPU, stage by stage, in one process; prints figures, asserts
nothing.

    python bench/index_stages.py --corpus PATH [--repeat 3]

Each stage runs over every file of the corpus, ``--repeat`` times; the least CPU time of the
repetitions is kept (other jobs on the host only ever add time), and each stage is printed as
a multiple of parsing alone, so the figures carry across hosts:
  * parse: tree-sitter parsing alone (the baseline of ``index_speed.py``)
  * query: the language's definitions/references query over the parsed tree
  * chunk: the rest of the chunker (definitions nested, blocks cut, names, docstrings, refs)
  * rows: the search columns of each block (camelCase parts, name parts, hashes) and the
    file's row in the file list (``filelist.words``)
  * worker: what the parse workers do (read, hash, parse, query, chunk, rows; batches of
    files, each batch's results pickled for the pipe); files without a grammar included
  * write: the writer's work (unpickling, rows, FTS5 indexes, name tables, commits)
  * compact: the FTS segments merged down to one, as a bulk run ends (``indexer/compact.py``)
With two cores, a full index can run at most at 2 / (worker + write + compact) times the parse.
"""

from __future__ import annotations

import argparse
import pickle
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: this checkout

from indexer import compact, schema, store  # noqa: E402
from indexer.chunker import chunk_file  # noqa: E402
from indexer.files import walk  # noqa: E402
from indexer.languages import grammar, language_for, new_parser  # noqa: E402
from indexer.pipeline import _batches, _prepare_many  # noqa: E402
from indexer.rows import prepare


def stages(files: list[tuple[str, str, bytes, str]]) -> dict[str, float]:
    import tree_sitter as ts

    cpu = dict.fromkeys(("parse", "query", "chunk", "rows", "worker", "write", "compact"), 0.0)
    parsers: dict[str, object] = {}
    for rel, lang, data, _ in files:
        g = grammar(lang)
        if g is None:
            continue
        parser = parsers.get(lang) or parsers.setdefault(lang, new_parser(lang))
        c = time.process_time()
        tree = parser.parse(data)  # type: ignore[attr-defined]
        cpu["parse"] += time.process_time() - c
        c = time.process_time()
        list(ts.QueryCursor(g.query).matches(tree.root_node))
        cpu["query"] += time.process_time() - c
        c = time.process_time()
        blocks = chunk_file(rel, data, lang, tree=tree)
        cpu["chunk"] += time.process_time() - c
        c = time.process_time()
        prepare(rel, blocks)
        cpu["rows"] += time.process_time() - c
    cpu["chunk"] -= cpu["query"]  # chunk_file ran the query too
    # As a full run does it: batches of files, each batch's results pickled to cross the pipe
    # (kept as bytes here; the writer's side unpickles them).
    args = [(rel, path, None) for rel, _, _, path in files]
    c = time.process_time()
    sent = [
        pickle.dumps(_prepare_many(b), -1) for b in _batches(args, [len(d) for *_, d, _ in files])
    ]
    cpu["worker"] = time.process_time() - c
    with tempfile.TemporaryDirectory(prefix="kiln-stages-") as tmp:
        conn = schema.connect(Path(tmp) / "index.db", 5.0)
        schema.migrate(conn)
        conn.execute("PRAGMA synchronous=OFF")  # as a full run writes
        c = time.process_time()
        out = (result for batch in sent for result in pickle.loads(batch))
        conn.execute("BEGIN")
        for i, (rel, _, prepared, size, h) in enumerate(out):
            if prepared is not None:
                store.write_file(conn, rel, language_for(rel), 0, size, h, prepared)
            if i % 64 == 63:
                conn.execute("COMMIT")
                conn.execute("BEGIN")
        conn.execute("COMMIT")
        cpu["write"] += time.process_time() - c
        c = time.process_time()
        merge_down(conn)
        cpu["compact"] = time.process_time() - c
        conn.close()
    return cpu


def merge_down(conn: sqlite3.Connection) -> None:
    """As ``Index.update`` ends a bulk run: each FTS table's segments merged down to one."""
    more = True
    while more:
        conn.execute("BEGIN")
        more = any([compact.merge_all(conn, table) for table in compact.TABLES])
        conn.execute("COMMIT")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"index_stages: not a folder: {args.corpus}")
    files = []
    for cand in walk(args.corpus):
        if cand.rel.startswith(".kiln/"):
            continue
        files.append((cand.rel, language_for(cand.rel), cand.path.read_bytes(), str(cand.path)))
    best: dict[str, float] = {}
    for _ in range(max(1, args.repeat)):
        for stage, seconds in stages(files).items():
            best[stage] = min(best.get(stage, seconds), seconds)
    code = sum(len(d) for _, lang, d, _ in files if lang != "text")
    print(f"corpus     {args.corpus}  ({code / 1e6:.1f} MB of code, {len(files)} files)")
    for stage, seconds in best.items():
        print(f"{stage:10s} {seconds:6.2f} CPU-s  {seconds / best['parse']:5.2f}x parse")
    total = best["worker"] + best["write"] + best["compact"]
    print(
        f"worker + write + compact = {total / best['parse']:.2f}x parse: with two free cores a full index "
        f"runs at most at {2 * best['parse'] / total:.2f}x the parse"
    )


if __name__ == "__main__":
    main()
