"""Do two checkouts of Kiln build the same index? Prints one line per corpus and table; exits 1
when anything differs.

    python bench/index_equivalence.py --before DIR --after DIR --corpus PATH [--corpus PATH ...]
        [--history]

Each corpus is copied (without ``.kiln``, and without ``.git`` unless ``--history``) to a temp folder and indexed there by
``Index.update`` of each checkout, in a process of its own (``PYTHONPATH`` = the checkout). The
two index files are then read with plain SQLite and compared table by table, every row keyed by
what it means rather than by row ids (which depend on write order):
  * files: path, language, size, hash, block count
  * blocks: every column of the ``blocks`` view but the id (``idents`` as written)
  * defs, refs: (name, block, path)
  * blocks_fts: every FTS5 instance (term, column, offset; no offset under ``detail=column``)
    of each block, as a multiset digest per block
  * files_fts: the file list's row per file
  * with ``--history`` (the corpus's git history recorded too): commits (sha, time, message,
    file count), commit_files (sha, path), commits_fts (every instance of each commit, keyed
    by sha) and the recorded head
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

BUILD = "import sys; from indexer.index import Index; Index(sys.argv[1]).update()"
KEY = "path, start_line, end_line, kind, name, hash"  # a block, whatever its row id


def build(tree: Path, root: Path, out: Path) -> None:
    shutil.rmtree(root / ".kiln", ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(tree))
    subprocess.run([sys.executable, "-c", BUILD, str(root)], env=env, check=True, cwd=tree)
    db = root / ".kiln" / "index.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.move(str(db), out)
    shutil.rmtree(root / ".kiln", ignore_errors=True)


def _digest(items: list[tuple]) -> int:
    """An order-free digest of a multiset of tuples."""
    total = 0
    for item in items:
        h = hashlib.blake2b(repr(item).encode(), digest_size=8).digest()
        total = (total + int.from_bytes(h, "big")) % (1 << 64)
    return total


def tables(db: Path) -> dict[str, Counter]:
    conn = sqlite3.connect(db)
    key = {row[0]: tuple(row[1:]) for row in conn.execute(f"SELECT id, {KEY} FROM blocks")}
    paths = dict(conn.execute("SELECT id, path FROM files"))
    out: dict[str, Counter] = {}
    out["files"] = Counter(conn.execute("SELECT path, language, size, hash, blocks FROM files"))
    cols = (
        "path, language, kind, name, signature, docstring, start_line, end_line, hash, text, "
        "refs, fts_path, fts_name, idents"
    )
    out["blocks"] = Counter(conn.execute(f"SELECT {cols} FROM blocks"))
    for table in ("defs", "refs"):
        out[table] = Counter(
            (name, key[block], paths[file])
            for name, block, file in conn.execute(f"SELECT name, block_id, file_id FROM {table}")
        )
    conn.execute("CREATE VIRTUAL TABLE temp.inst USING fts5vocab(main, blocks_fts, 'instance')")
    per_block: dict[int, list[tuple]] = {}
    for term, doc, col, offset in conn.execute("SELECT term, doc, col, offset FROM temp.inst"):
        per_block.setdefault(doc, []).append((term, col, offset))
    out["blocks_fts"] = Counter(
        (key[doc], len(items), _digest(items)) for doc, items in per_block.items()
    )
    out["files_fts"] = Counter(
        (paths[rowid], words) for rowid, words in conn.execute("SELECT rowid, words FROM files_fts")
    )
    _history(conn, out)
    conn.close()
    return out


def _history(conn: sqlite3.Connection, out: dict[str, Counter]) -> None:
    """The history signal's tables, keyed by commit sha (ids follow write order)."""
    sha = dict(conn.execute("SELECT id, sha FROM commits"))
    if not sha:
        return
    out["commits"] = Counter(conn.execute("SELECT sha, time, message, files FROM commits"))
    out["commit_files"] = Counter(
        (sha[commit], path) for commit, path in conn.execute("SELECT * FROM commit_files")
    )
    conn.execute("CREATE VIRTUAL TABLE temp.cinst USING fts5vocab(main, commits_fts, 'instance')")
    per_commit: dict[int, list[tuple]] = {}
    for term, doc, col, offset in conn.execute("SELECT term, doc, col, offset FROM temp.cinst"):
        per_commit.setdefault(doc, []).append((term, col, offset))
    out["commits_fts"] = Counter(
        (sha[doc], len(items), _digest(items)) for doc, items in per_commit.items()
    )
    out["history_head"] = Counter(
        conn.execute("SELECT value FROM meta WHERE key = 'history_head'").fetchall()
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--before", type=Path, required=True, help="a checkout of Kiln")
    ap.add_argument("--after", type=Path, required=True, help="another checkout of Kiln")
    ap.add_argument("--corpus", type=Path, action="append", required=True)
    ap.add_argument("--history", action="store_true", help="copy .git: compare the history too")
    args = ap.parse_args()
    for tree in (args.before, args.after):
        if not (tree / "indexer" / "index.py").is_file():
            sys.exit(f"index_equivalence: not a Kiln checkout: {tree}")
    for corpus in args.corpus:
        if not corpus.is_dir():
            sys.exit(f"index_equivalence: not a folder: {corpus}")
    differ = False
    for corpus in args.corpus:
        with tempfile.TemporaryDirectory(prefix="kiln-eq-") as tmp:
            root = Path(tmp) / corpus.name
            skip = (".kiln",) if args.history else (".git", ".kiln")
            shutil.copytree(corpus, root, ignore=shutil.ignore_patterns(*skip))
            dumps = []
            for n, tree in enumerate((args.before, args.after)):
                out = Path(tmp) / f"index-{n}.db"
                build(tree.resolve(), root, out)
                dumps.append(tables(out))
        for table in [*dumps[0], *(t for t in dumps[1] if t not in dumps[0])]:
            before, after = dumps[0].get(table, Counter()), dumps[1].get(table, Counter())
            gone, new = before - after, after - before
            rows = sum(before.values())
            status = (
                "same"
                if not gone and not new
                else f"DIFFER: {sum(gone.values())} rows only before, {sum(new.values())} only after"
            )
            print(f"{corpus.name:12s} {table:10s} {rows:9d} rows  {status}")
            for row in list(gone)[:3]:
                print(f"    before: {str(row)[:300]}")
            for row in list(new)[:3]:
                print(f"    after:  {str(row)[:300]}")
            differ |= bool(gone or new)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
