"""Replay the history sets against saved index snapshots, so a ranking change is scored in
seconds instead of re-indexing every parent commit.

    python -m bench.retrieval_replay save --data DIR --repo PATH [--repo ...] [--max-commits 100]
    python -m bench.retrieval_replay score --data DIR [--set NAME ...] [--weights FILE]
                                           [--per-query] [--compare RANKS.json] [--save RANKS.json]

``save`` walks each set's parent snapshots exactly as ``bench.retrieval history`` does (one
private ``--shared`` checkout, ``Index.update()`` per parent) and keeps a copy of the index
database after each update, with the queries in ``queries.json``. ``score`` runs the live
``indexer.ranking.search`` (this tree's code, and the constants of ``--weights`` if given) over
those copies: the figures match an end-to-end run of the same code as long as the change is in
the ranking, not in what the indexer stores. A snapshot saved by an older indexer is first
brought up to the current schema in place (``bring_up``: the steps only add what a search
reads). ``--compare`` lists the queries whose first
relevant rank moved against an earlier ``--save``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.datasets import DatasetError  # noqa: E402
from bench.retrieval import DEPTH, load_weights  # noqa: E402
from bench.retrieval_metrics import bootstrap_ci, file_ranking, first_rank, summarize  # noqa: E402


def save(repo: Path, data: Path, max_commits: int) -> int:
    """Index every parent snapshot of ``repo``'s set and keep a copy of each database."""
    from bench.datasets import history
    from indexer import Index

    qs = history.queries(history.mine(repo, max_commits=max_commits))
    out = data / repo.resolve().name
    out.mkdir(parents=True, exist_ok=True)
    meta = [{"qid": q.qid, "text": q.text, "files": sorted(q.files)} for q in qs]
    (out / "queries.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="kiln-replay-") as tmp:
        snap = history.Snapshot(repo, Path(tmp) / "worktree")
        snap.goto(qs[0].snapshot)
        index = Index(snap.root)
        for q in qs:
            if q.snapshot != snap.commit:
                snap.goto(q.snapshot)
            index.update()
            target = out / f"{q.qid}.db"
            if not target.exists():  # written aside, then renamed: `score` may run meanwhile
                part = target.with_suffix(".part")
                part.unlink(missing_ok=True)
                dst = sqlite3.connect(part)
                index._reader().backup(dst)  # noqa: SLF001 (a bench tool reading its own index)
                dst.close()
                part.rename(target)
        index.close()
    return len(qs)


def bring_up(db: Path) -> None:
    """Apply the schema steps a snapshot saved by an older indexer lacks (a later step adds
    a column the search reads: without it every search of the snapshot fails)."""
    from indexer import schema

    conn = sqlite3.connect(db, isolation_level=None)
    try:
        if schema._pending_names(conn):  # noqa: SLF001 (a bench tool bringing its copies up)
            import sqlite_utils

            db_ = sqlite_utils.Database(conn)
            with schema.immediate(conn):
                schema.migration_set().apply(db_)
    finally:
        conn.close()


def score_set(folder: Path) -> dict[str, int | None]:
    """First relevant file rank per query of one saved set, with the live ranking code (a
    set still being saved is scored on the snapshots saved so far)."""
    from indexer.ranking import search

    ranks: dict[str, int | None] = {}
    for q in json.loads((folder / "queries.json").read_text(encoding="utf-8")):
        db = folder / (q["qid"] + ".db")
        if not db.exists() or db.with_name(db.name + "-journal").exists():
            continue
        bring_up(db)
        conn = sqlite3.connect(f"file:{folder / (q['qid'] + '.db')}?mode=ro", uri=True)
        try:
            hits = search(conn, q["text"], DEPTH)
        except sqlite3.OperationalError as exc:  # a snapshot still being written
            print(f"{folder.name}/{db.name} skipped: {exc}", file=sys.stderr)
            continue
        finally:
            conn.close()
        files = file_ranking(hits)
        ranks[q["qid"]] = first_rank([f in q["files"] for f in files])
    return ranks


def _row(name: str, ranks: list[int | None]) -> str:
    s = summarize(ranks)
    lo, hi = bootstrap_ci(ranks, 1)
    return (
        f"{name:<14} {len(ranks):>5}  {s['R@1']:.3f} / {s['R@5']:.3f} / {s['R@10']:.3f}"
        f"  MRR {s['MRR']:.3f}  R@1 CI {lo:.2f}-{hi:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval_replay")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("save")
    sv.add_argument("--data", type=Path, required=True)
    sv.add_argument("--repo", type=Path, action="append", required=True)
    sv.add_argument("--max-commits", type=int, default=100)
    sc = sub.add_parser("score")
    sc.add_argument("--data", type=Path, required=True)
    sc.add_argument("--set", action="append", default=None, help="saved set names (default all)")
    sc.add_argument("--weights", type=Path, default=None)
    sc.add_argument("--per-query", action="store_true")
    sc.add_argument("--compare", type=Path, default=None)
    sc.add_argument("--save", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "save":
            for repo in args.repo:
                print(f"{repo.name}: {save(repo, args.data, args.max_commits)} snapshots saved")
            return 0
        if args.weights is not None:
            load_weights(args.weights)
        names = args.set or sorted(
            p.name for p in args.data.iterdir() if (p / "queries.json").exists()
        )
        if not names:
            raise DatasetError(f"no saved sets in {args.data}", hint="run `save` first")
        every: dict[str, dict[str, int | None]] = {n: score_set(args.data / n) for n in names}
    except DatasetError as exc:
        print(f"error: {exc}" + (f" ({exc.hint})" if exc.hint else ""), file=sys.stderr)
        return exc.exit_code
    texts = {
        n: {q["qid"]: q["text"] for q in json.loads((args.data / n / "queries.json").read_text())}
        for n in names
    }
    before = json.loads(args.compare.read_text()) if args.compare else {}
    for name, ranks in every.items():
        print(_row(name, list(ranks.values())))
        for qid, rank in ranks.items():
            old = before.get(name, {}).get(qid, rank) if before else rank
            if args.per_query or old != rank:
                print(f"    {qid} {old} -> {rank}  {texts[name][qid][:90]}")
    if len(every) > 1:
        print(_row("pooled", [r for ranks in every.values() for r in ranks.values()]))
    if args.save:
        args.save.write_text(json.dumps(every), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
