"""The writer's SQLite work in a first full index, under variants of how it writes; prints
figures, asserts nothing.

    python bench/index_writes.py --corpus PATH [--rounds 3] [--per 4] [VARIANT ...]

The corpus is chunked once, in this process, into the rows the parse workers send
(``pipeline._prepare_many`` over ``pipeline._batches``). Then each round writes those same
rows into a fresh index file once per variant, the variants in turn (so the host's drift
spreads over all of them): ``store.write_file`` per file, one transaction per ``--per`` worker
batches (a full run commits every ``index.BATCH_SECONDS``, about four batches on SQLAlchemy),
``synchronous=OFF`` and the bulk ``crisismerge`` as ``Index.update`` sets them, then the FTS
segments merged down to one as a bulk run ends. Printed per variant: CPU-s of the writes and
of the end (merge, and what the variant does after the load), their total (least and median
of the rounds), the file's size, and the rows' digest (``index_equivalence``'s tables, so a
variant that writes something else says so). Variants (``base`` is what the index does):
  * hashsize: FTS5's in-memory hash of pending terms 8 MB (default 1 MB), fewer segments
  * pgsz: FTS5 leaf pages of 8000 bytes (default 4050)
  * late-indexes: the ``file_id`` indexes of ``block_rows``, ``defs``, ``refs`` made after
    the load, not kept up while it runs
  * no-refs-index: no ``refs_file`` index at all (a file's ``refs`` rows found otherwise)
  * exclusive: ``locking_mode=EXCLUSIVE`` (no shared-memory locking per transaction)
  * cache: a 256 MB page cache (64 MB as connected)
  * journal-memory: no WAL (the rollback journal in memory): a kill during a write would
    damage the file, so a figure only
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: this checkout

from bench.index_equivalence import tables  # noqa: E402
from indexer import compact, schema, store  # noqa: E402
from indexer.files import walk  # noqa: E402
from indexer.languages import language_for  # noqa: E402
from indexer.pipeline import _batches, _prepare_many  # noqa: E402

FILE_INDEXES = {"blocks_file": "block_rows", "defs_file": "defs", "refs_file": "refs"}


def _fts_setting(key: str, value: int) -> Callable:
    def before(conn) -> None:  # type: ignore[no-untyped-def]
        for table in ("blocks_fts", "files_fts"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES (?, ?)", (key, value))

    return before


def _pragma(setting: str) -> Callable:
    return lambda conn: conn.execute(f"PRAGMA {setting}")


def _drop(names: tuple[str, ...]) -> Callable:
    def before(conn) -> None:  # type: ignore[no-untyped-def]
        for name in names:
            conn.execute(f"DROP INDEX {name}")

    return before


def _make_indexes(conn) -> None:  # type: ignore[no-untyped-def]
    for name, table in FILE_INDEXES.items():
        conn.execute(f"CREATE INDEX {name} ON {table}(file_id)")


def _nothing(conn) -> None:  # type: ignore[no-untyped-def]
    pass


# name -> (before the load, after it)
VARIANTS: dict[str, tuple[Callable, Callable]] = {
    "base": (_nothing, _nothing),
    "hashsize": (_fts_setting("hashsize", 8 << 20), _nothing),
    "pgsz": (_fts_setting("pgsz", 8000), _nothing),
    "late-indexes": (_drop(tuple(FILE_INDEXES)), _make_indexes),
    "no-refs-index": (_drop(("refs_file",)), _nothing),
    "exclusive": (_pragma("locking_mode=EXCLUSIVE"), _nothing),
    "cache": (_pragma("cache_size=-262144"), _nothing),
    "journal-memory": (_pragma("journal_mode=MEMORY"), _nothing),
}


def prepare(corpus: Path) -> list[list]:
    files = [(c.rel, str(c.path)) for c in walk(corpus) if not c.rel.startswith(".kiln/")]
    args = [(rel, path, None, None) for rel, path in files]
    sizes = [Path(path).stat().st_size for _, path in files]
    return [_prepare_many(batch) for batch in _batches(args, sizes)]


def one_write(
    sent: list[list], variant: str, per: int, check: bool
) -> tuple[float, float, int, str]:
    """(CPU-s of the writes, of the end, the file's bytes, with ``check`` a digest of its
    rows, else "")."""
    before, after = VARIANTS[variant]
    with tempfile.TemporaryDirectory(prefix="kiln-writes-") as tmp:
        db = Path(tmp) / "index.db"
        conn = schema.connect(db, 5.0)
        schema.migrate(conn)
        conn.execute("PRAGMA synchronous=OFF")  # as a bulk run writes
        compact.set_crisis(conn, compact.BULK_CRISIS)
        before(conn)
        c = time.process_time()
        for first in range(0, len(sent), per):
            conn.execute("BEGIN")
            for batch in sent[first : first + per]:
                for rel, _, prepared, size, digest in batch:
                    if prepared is not None:
                        store.write_file(conn, rel, language_for(rel), 0, size, digest, prepared)
            conn.execute("COMMIT")
        writes = time.process_time() - c
        c = time.process_time()
        after(conn)
        merging = True
        while merging:
            conn.execute("BEGIN")
            merging = any([compact.merge_all(conn, table) for table in compact.TABLES])
            conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        end = time.process_time() - c
        conn.close()
        return writes, end, os.path.getsize(db), _rows_digest(db) if check else ""


def _rows_digest(db: Path) -> str:
    """What ``index_equivalence`` compares, as one short digest (row ids left out)."""
    found = tables(db)
    text = repr(sorted((name, sorted(rows.items())) for name, rows in found.items()))
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--per", type=int, default=4, help="worker batches per transaction")
    ap.add_argument("variants", nargs="*", default=["base", *sorted(set(VARIANTS) - {"base"})])
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"index_writes: not a folder: {args.corpus}")
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        sys.exit(f"index_writes: no such variant: {', '.join(unknown)} (see --help)")
    sent = prepare(args.corpus)
    runs: dict[str, list[tuple[float, float, int, str]]] = {v: [] for v in args.variants}
    for n in range(max(1, args.rounds)):
        for variant in args.variants:
            runs[variant].append(one_write(sent, variant, args.per, check=n == 0))
    print(f"corpus {args.corpus}: {sum(map(len, sent))} files, {len(sent)} batches")
    for variant, done in runs.items():
        totals = [w + e for w, e, _, _ in done]
        writes = min(w for w, _, _, _ in done)
        end = min(e for _, e, _, _ in done)
        print(
            f"{variant:15s} writes {writes:5.2f}  end {end:5.2f}  total least "
            f"{min(totals):5.2f} median {statistics.median(totals):5.2f} CPU-s  "
            f"{done[0][2] / 1e6:6.1f} MB  rows {done[0][3]}"
        )


if __name__ == "__main__":
    main()
