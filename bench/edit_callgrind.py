"""Count the instructions of each of ``edit_replay.py``'s typing edits and of the search after
it, under callgrind: the same count whatever else the host runs, where CPU time on a loaded
host moves by a third between runs. Prints figures, asserts nothing.

    python bench/edit_callgrind.py --corpus /tmp/repos/sqlalchemy --work /tmp/edit-replay
                                   [--checkout DIR] [--typing 30] [--keep DIR] [--steps]

``--keep DIR`` keeps each step's callgrind file there (``cg.out.<pid>.<n>``: update, then
search, edit by edit; ``callgrind_annotate --inclusive=yes`` shows where a search went) and
writes ``counts.json`` (marker, millions of instructions of ``update_file`` and of the search).
``--steps`` also counts each step of the search on its own (``STEPS``; a dump at each step's
start and end, which adds a little) and prints them, with their mean over the largest searches.

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
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLIENT = """#include <valgrind/callgrind.h>
void cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void cg_dump(const char *s) { CALLGRIND_DUMP_STATS_AT(s); }
"""


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


# With --steps: the search's steps, each counted on its own (module under indexer -> names;
# a step inside another is left out of the outer one's count; the rest is "search").
STEPS = {
    "ranking": [
        "_lexical",
        "rescore",
        "_seeds",
        "graph_rank",
        "_meta",
        "generated_files",
        "verbatim_blocks",
        "add_test_subjects",
        "_add_history",
        "_group",
        "_texts",
    ],
    "filelist": ["candidates"],
    "scoped": ["candidates"],
    "scope_history": ["package_shares"],
    "search_cache": ["SearchCache.history", "Symbols.check"],
}


def count_steps(cg: Any, stack: list[str]) -> None:
    """Wrap each step of ``STEPS`` so that a dump ends at its start (counted to the step it
    interrupts, ``stack[-1]``) and at its end (counted to itself)."""
    import importlib

    for module_name, names in STEPS.items():
        module = importlib.import_module(f"indexer.{module_name}")
        for name in names:
            owner, _, attr = name.rpartition(".")
            target = getattr(module, owner) if owner else module
            if not hasattr(target, attr):  # an older checkout may lack a step
                continue
            label = f"{module_name}.{name}" if module_name != "ranking" else name
            setattr(target, attr, _counted(getattr(target, attr), label, cg, stack))


def _counted(fn: Any, label: str, cg: Any, stack: list[str]) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cg.cg_dump(stack[-1].encode())
        stack.append(label)
        try:
            return fn(*args, **kwargs)
        finally:
            cg.cg_dump(label.encode())
            stack.pop()

    return wrapper


def child(args: argparse.Namespace) -> None:
    """Under valgrind: the edits, counting only ``update_file`` and the search."""
    sys.path[:0] = [str(args.checkout), str(ROOT)]
    from bench.index_speed import typing_plans
    from indexer import Index

    cg = ctypes.CDLL(str(args.lib))
    stack = ["update"]
    if args.steps:
        count_steps(cg, stack)
    run = args.work / "cg-run"
    typed = []
    with Index(run) as idx:
        for rel, text, spots in typing_plans(idx, run, random.Random(7), 3, args.typing):
            lines = text.split("\n")
            idx.update_file(rel, text)  # the editor opens the file
            for n, (i, indent) in enumerate(spots):
                marker = f"kiln_typed_{n}_{len(lines)}"
                typed.append(f"{rel}:{marker}")
                lines.insert(i, f"{indent}{marker} = {n}")
                new = "\n".join(lines)
                cg.cg_toggle()
                idx.update_file(rel, new)
                cg.cg_dump(b"update")
                stack[0] = "search"
                idx.search(marker, 10)
                cg.cg_dump(b"search")
                cg.cg_toggle()
                stack[0] = "update"
            idx.update_file(rel, text)
    (args.lib.parent / "markers.txt").write_text("\n".join(typed), encoding="utf-8")


def dumps(folder: Path) -> list[str]:
    """The per-step callgrind files, in the order they were written."""
    return sorted(glob.glob(str(folder / "cg.out.*.*")), key=lambda f: int(f.rsplit(".", 1)[1]))


def counts(folder: Path) -> list[dict[str, float]]:
    """Millions of instructions per edit, by the step named in each dump's trigger (an edit
    starts at its ``update`` dump)."""
    out: list[dict[str, float]] = []
    for name in dumps(folder):
        step = total = None
        with open(name, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if line.startswith("desc: Trigger"):
                    step = line.rsplit(":", 1)[1].strip()
                elif line.startswith("totals:"):
                    total = int(line.split()[1])
        if step is None or total is None or (step != "update" and not out):
            continue
        if step == "update":
            out.append({})
        out[-1][step] = out[-1].get(step, 0.0) + total / 1e6
    return out


def search_of(edit: dict[str, float]) -> float:
    return sum(v for k, v in edit.items() if k != "update")


def keep(folder: Path, into: Path, found: list[dict[str, float]]) -> None:
    """Copy the callgrind files to ``into`` with ``counts.json``: one row per edit."""
    into.mkdir(parents=True, exist_ok=True)
    for name in dumps(folder):
        shutil.copy(name, into)
    typed = (folder / "markers.txt").read_text(encoding="utf-8").split("\n")
    rows = [
        {"edit": n, "marker": m, "update": e["update"], "search": search_of(e), "steps": e}
        for n, (m, e) in enumerate(zip(typed, found, strict=True))
    ]
    (into / "counts.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")


def print_steps(found: list[dict[str, float]]) -> None:
    """Each step's count over all edits, and its mean over the edits whose search is in the
    slowest tenth (the p95 searches)."""
    slow = sorted(found, key=search_of)[-max(1, len(found) // 10) :]
    print(f"  search steps: p50, p95, mean over the {len(slow)} largest searches")
    labels = dict.fromkeys(k for e in found for k in e if k != "update")
    for label in sorted(labels, key=lambda k: -sum(e.get(k, 0.0) for e in slow)):
        values = [e.get(label, 0.0) for e in found]
        top = sum(e.get(label, 0.0) for e in slow) / len(slow)
        print(f"    {label:28s} {pct(values, 50):6.2f} {pct(values, 95):6.2f} {top:6.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the indexer to import")
    ap.add_argument("--typing", type=int, default=30)
    ap.add_argument("--keep", type=Path, help="keep the callgrind files and counts.json here")
    ap.add_argument("--steps", action="store_true", help="count the search's steps apart")
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
        command += ["--typing", str(args.typing), *(["--steps"] if args.steps else [])]
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(command, check=True, env=env, stderr=subprocess.DEVNULL)
        found = counts(folder)
        if args.keep is not None:
            keep(folder, args.keep, found)
    shutil.rmtree(run, ignore_errors=True)
    update = [e["update"] for e in found]
    search = [search_of(e) for e in found]
    total = [u + s for u, s in zip(update, search, strict=True)]
    print(f"indexer from {args.checkout}; {len(total)} edits; millions of instructions")
    for label, values in (("edit -> searchable", total), ("update", update), ("search", search)):
        print(f"  {label:20s} p50 {pct(values, 50):6.1f}  p95 {pct(values, 95):6.1f}")
    if args.steps:
        print_steps(found)


if __name__ == "__main__":
    main()
