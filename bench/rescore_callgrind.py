"""Count the instructions of one re-ranking (``indexer/rescore.py``) of the candidates of chosen
typing edits, with every candidate read afresh and with every candidate kept, under callgrind.
Prints figures, asserts nothing.

    python bench/rescore_callgrind.py --corpus /tmp/repos/sqlalchemy --work /tmp/edit-replay
                                      [--checkout DIR] [--edits 10,11,14,20,40,43]

Replays ``edit_replay.py``'s typing edits (its base index in ``WORK/base``, built if missing) on
a copy; at each chosen edit (numbered from 0 over the three modules: 40 is the second module's
``kiln_typed_10_…``) the index file is copied as it stands when the search re-ranks, with the
candidates, terms and counts of that call. Then, under valgrind, each copy is re-ranked three
times: once unmeasured (the stems and SQLite's page cache warm, as in a session), then with an
empty ``BlockTerms`` (every candidate read: the first module's p95 searches), then with the same
one (every candidate kept). Needs valgrind with its headers and a C compiler, as
``edit_callgrind.py``; compare checkouts, not absolute figures. Also prints how many of each
edit's candidates a safe early stop could place unread (``placed_unread``).
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: bench.edit_callgrind

from bench.edit_callgrind import CLIENT  # noqa: E402


def capture(args: argparse.Namespace, folder: Path) -> None:
    """Natively: replay the edits and keep, for each chosen one, the index and the call."""
    sys.path[:0] = [str(args.checkout)]
    from bench.index_speed import typing_plans
    from indexer import Index, ranking

    wanted = {int(n) for n in args.edits.split(",")}
    base, run = args.work / "base", args.work / "rs-run"
    if not (base / ".kiln" / "index.db").exists():
        build = [sys.executable, str(ROOT / "bench" / "edit_replay.py"), "--corpus"]
        build += [str(args.corpus), "--work", str(args.work), "--checkout", str(args.checkout)]
        subprocess.run(build, check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(base, run, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    real = ranking.rescore
    edit = [0]
    calls = []

    def kept_call(
        conn: sqlite3.Connection,
        ids: list[int],
        terms: list[str],
        df: dict[str, int],
        kept: Any = None,
    ) -> list[int]:
        if edit[0] in wanted:
            copy = sqlite3.connect(folder / f"edit{edit[0]}.db")
            conn.backup(copy)
            copy.close()
            alone = placed_unread(conn, ids, terms, df)
            calls.append({"edit": edit[0], "ids": ids, "terms": terms, "df": df, "alone": alone})
        return real(conn, ids, terms, df, kept)

    ranking.rescore = kept_call
    with Index(run) as idx:
        for rel, text, spots in typing_plans(idx, run, random.Random(7), 3, 30):
            lines = text.split("\n")
            idx.update_file(rel, text)
            for n, (i, indent) in enumerate(spots):
                marker = f"kiln_typed_{n}_{len(lines)}"
                lines.insert(i, f"{indent}{marker} = {n}")
                idx.update_file(rel, "\n".join(lines))
                idx.search(marker, 10)
                edit[0] += 1
            idx.update_file(rel, text)
    shutil.rmtree(run, ignore_errors=True)
    (folder / "calls.json").write_text(json.dumps(calls), encoding="utf-8")


def placed_unread(conn: sqlite3.Connection, ids: list[int], terms: list[str], df: dict) -> int:
    """How many candidates a safe early stop could place without reading their text: each
    gets an interval from what is at hand (its exact share of the terms the block search
    scored, which FTS5's ``bm25()`` gives, up to that plus the left-out terms' largest share,
    idf * (k1 + 1)); one that meets no other's interval has a known place."""
    import math

    from indexer import rescore as R
    from indexer import weights as W
    from indexer.block_terms import read
    from indexer.tokens import vocabulary_term

    rows, average = R.statistics(conn)
    idf = {}
    for term in terms:
        token, hits = vocabulary_term(term), df.get(term, 0)
        if token is not None and hits > 0:
            idf[token] = max(math.log((rows - hits + 0.5) / (hits + 0.5)), 1e-6)
    starts = list({b" " + t[: max(3, len(t) - 1)].encode("utf-8") for t in idf})
    left_out = {vocabulary_term(t) for t in terms if df.get(t, 0) > W.MATCH_DOC_BUDGET}
    cap = sum(idf[t] * (R._K1 + 1) for t in left_out if t in idf)
    known = []
    for block in read(conn, ids).values():
        norm = R._K1 * (1 - R._B + R._B * block.length / average)
        held = R._frequencies(block, starts, idf, {})
        known.append(
            sum(idf[t] * f * (R._K1 + 1) / (f + norm) for t, f in held.items() if t not in left_out)
        )
    spans = [(lo, lo + cap) for lo in known]
    return sum(
        1
        for n, (lo, hi) in enumerate(spans)
        if all(top <= lo or low >= hi for m, (low, top) in enumerate(spans) if m != n)
    )


def child(args: argparse.Namespace) -> None:
    """Under valgrind: each kept call re-ranked afresh, then kept."""
    sys.path[:0] = [str(args.checkout)]
    from indexer.block_terms import BlockTerms
    from indexer.rescore import rescore

    cg = ctypes.CDLL(str(args.lib))
    for call in json.loads((args.folder / "calls.json").read_text(encoding="utf-8")):
        conn = sqlite3.connect(args.folder / f"edit{call['edit']}.db")
        ids, terms, df = call["ids"], call["terms"], call["df"]
        rescore(conn, ids, terms, df)  # stems and page cache warm, as in a session
        kept = BlockTerms()
        cg.cg_toggle()
        rescore(conn, ids, terms, df, kept)
        cg.cg_dump(f"fresh {call['edit']} {len(ids)}".encode())
        rescore(conn, ids, terms, df, kept)
        cg.cg_dump(f"kept {call['edit']} {len(ids)}".encode())
        cg.cg_toggle()
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the indexer to import")
    ap.add_argument("--edits", default="10,11,14,20,40,43", help="edit numbers, from 0")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--lib", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if not args.corpus.is_dir():
        sys.exit(f"rescore_callgrind: not a folder: {args.corpus}")
    if not all(n.strip().isdigit() for n in args.edits.split(",")):
        sys.exit(f"rescore_callgrind: --edits takes edit numbers such as 10,40: {args.edits}")
    if shutil.which("valgrind") is None or shutil.which("cc") is None:
        sys.exit("rescore_callgrind: needs valgrind and a C compiler (cc)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        capture(args, folder)
        (folder / "client.c").write_text(CLIENT, encoding="utf-8")
        lib = folder / "libclient.so"
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(folder / "client.c")])
        if not lib.exists():
            sys.exit("rescore_callgrind: could not build the client library (valgrind headers?)")
        command = ["valgrind", "--tool=callgrind", "--collect-atstart=no"]
        command += [f"--callgrind-out-file={folder}/cg.out.%p", sys.executable, __file__]
        command += ["--child", "--lib", str(lib), "--folder", str(folder), "--corpus"]
        command += [str(args.corpus), "--work", str(args.work), "--checkout", str(args.checkout)]
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(command, check=True, env=env, stderr=subprocess.DEVNULL)
        alone = {
            str(c["edit"]): c["alone"]
            for c in json.loads((folder / "calls.json").read_text(encoding="utf-8"))
        }
        rows = []
        for name in sorted(
            glob.glob(str(folder / "cg.out.*.*")), key=lambda f: int(f.rsplit(".", 1)[1])
        ):
            step = total = None
            for line in Path(name).read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("desc: Trigger"):
                    step = line.rsplit(":", 1)[1].strip()
                elif line.startswith("totals:"):
                    total = int(line.split()[1])
            if step and total is not None:
                rows.append((step.split(), total / 1e6))
    print(f"indexer from {args.checkout}; millions of instructions per re-ranking")
    for (how, edit, candidates), count in rows:
        print(f"  edit {edit:>3s}  {candidates:>3s} candidates  {how:5s}  {count:6.2f}")
    for edit, count in alone.items():
        print(f"  edit {edit:>3s}: {count} candidates could be placed without reading their text")


if __name__ == "__main__":
    main()
