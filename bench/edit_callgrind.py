"""Count the instructions of each of ``edit_replay.py``'s typing edits and of the search after
it, under callgrind: the same count whatever else the host runs, where CPU time on a loaded
host moves by a third between runs. Prints figures, asserts nothing.

    python bench/edit_callgrind.py --corpus /tmp/repos/sqlalchemy --work /tmp/edit-replay
                                   [--checkout DIR] [--typing 30]

Uses (and builds if missing) ``edit_replay.py``'s base index in ``WORK/base``, copied to
``WORK/cg-run``; build the base with the checkout being measured, so that its stored hashes
are that checkout's. Needs valgrind with its headers and a C compiler: a tiny library issues
callgrind's client requests, so only ``update_file`` and the search are counted, with a dump
per step. Valgrind's CPU lacks some instructions (SHA), so a library may take a slower path
there than on the host: compare checkouts, not absolute figures.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = """#include <valgrind/callgrind.h>
void cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void cg_dump(const char *s) { CALLGRIND_DUMP_STATS_AT(s); }
"""


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def child(args: argparse.Namespace) -> None:
    """Under valgrind: the edits, counting only ``update_file`` and the search."""
    sys.path[:0] = [str(args.checkout), str(ROOT)]
    from bench.index_speed import typing_plans
    from indexer import Index

    cg = ctypes.CDLL(str(args.lib))
    run = args.work / "cg-run"
    with Index(run) as idx:
        for rel, text, spots in typing_plans(idx, run, random.Random(7), 3, args.typing):
            lines = text.split("\n")
            idx.update_file(rel, text)  # the editor opens the file
            for n, (i, indent) in enumerate(spots):
                marker = f"kiln_typed_{n}_{len(lines)}"
                lines.insert(i, f"{indent}{marker} = {n}")
                new = "\n".join(lines)
                cg.cg_toggle()
                idx.update_file(rel, new)
                cg.cg_dump(b"update")
                idx.search(marker, 10)
                cg.cg_dump(b"search")
                cg.cg_toggle()
            idx.update_file(rel, text)


def counts(folder: Path) -> dict[str, list[float]]:
    """Millions of instructions per dump, by the step named in its trigger."""
    out: dict[str, list[float]] = {"update": [], "search": []}
    files = glob.glob(str(folder / "cg.out.*.*"))
    for name in sorted(files, key=lambda f: int(f.rsplit(".", 1)[1])):
        step = total = None
        for line in Path(name).read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("desc: Trigger"):
                step = line.rsplit(":", 1)[1].strip()
            elif line.startswith("totals:"):
                total = int(line.split()[1])
        if step in out and total is not None:
            out[step].append(total / 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the indexer to import")
    ap.add_argument("--typing", type=int, default=30)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--lib", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if not args.corpus.is_dir():
        sys.exit(f"edit_callgrind: not a folder: {args.corpus}")
    if shutil.which("valgrind") is None or shutil.which("cc") is None:
        sys.exit("edit_callgrind: needs valgrind and a C compiler (cc)")
    base, run = args.work / "base", args.work / "cg-run"
    if not (base / ".kiln" / "index.db").exists():
        build = [sys.executable, str(ROOT / "bench" / "edit_replay.py"), "--corpus"]
        build += [str(args.corpus), "--work", str(args.work), "--checkout", str(args.checkout)]
        subprocess.run(build, check=True)
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(base, run, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "client.c").write_text(CLIENT, encoding="utf-8")
        lib = folder / "libclient.so"
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(folder / "client.c")])
        if not lib.exists():
            sys.exit("edit_callgrind: could not build the client library (valgrind headers?)")
        command = ["valgrind", "--tool=callgrind", "--collect-atstart=no"]
        command += [f"--callgrind-out-file={folder}/cg.out.%p", sys.executable, __file__]
        command += ["--child", "--lib", str(lib), "--corpus", str(args.corpus)]
        command += ["--work", str(args.work), "--checkout", str(args.checkout)]
        command += ["--typing", str(args.typing)]
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(command, check=True, env=env, stderr=subprocess.DEVNULL)
        found = counts(folder)
    shutil.rmtree(run, ignore_errors=True)
    total = [u + s for u, s in zip(found["update"], found["search"], strict=True)]
    print(f"indexer from {args.checkout}; {len(total)} edits; millions of instructions")
    for label, values in (("edit -> searchable", total), *found.items()):
        if values:
            print(f"  {label:20s} p50 {pct(values, 50):6.1f}  p95 {pct(values, 95):6.1f}")


if __name__ == "__main__":
    main()
