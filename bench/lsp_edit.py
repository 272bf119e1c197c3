"""Edit -> searchable through a real `kiln lsp`, as an editor sees it. Prints figures, asserts
nothing.

    python bench/lsp_edit.py --corpus /tmp/repos/sqlalchemy --work /tmp/lsp-edit

The first run copies the corpus (its ``.git`` too) to ``WORK/base`` and indexes it; every run
copies that tree to ``WORK/run`` and starts ``python -m lsp_server lsp`` there over stdio (the
indexer of ``--checkout``), waits for its first scan, opens the largest modules with
``didOpen`` and types the bench's statement lines into function bodies (``index_speed.py
--only-typing``'s plan: three modules, 30 lines each, seed 7), each as one incremental
``didChange`` followed by a ``textDocument/hover`` on the typed name, which takes the buffer
into the index and searches for the word (found: the hover names the edited file at or above
the typed line). Per edit: the wall clock from sending the change to the hover's answer, and
the server's CPU time (every thread, from ``/proc/PID/task/*/schedstat``, in nanoseconds) and
the time its threads waited for a CPU (run-queue delay). Same run, the baseline: a second hover
on the same word with no edit in between (the search alone, through the same path).
``--checkout`` given several times (with ``--rounds N``) alternates the servers of several
trees on the same edits, each on a fresh copy, and pools each one's figures at the end.
``--profile DIR`` runs the server under ``bench/profiled_server.py`` (cProfile per thread, on
each thread's CPU clock; the figures then include the profiler's own cost). ``--trace FILE``
runs it under ``bench/traced_server.py`` (each step's start and end, with its thread and CPU
clock) and prints where each edit's wall clock went: the steps, the hand-overs between the
server's threads, and per thread its CPU time and its wait for a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def threads(pid: int) -> dict[int, tuple[int, int]]:
    """Thread id -> (CPU ns, run-queue wait ns), for the live threads of ``pid``."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            ran, waited, _ = (task / "schedstat").read_text().split()
        except (OSError, ValueError):
            continue  # a thread that just ended
        found[int(task.name)] = (int(ran), int(waited))
    return found


def sched(pid: int) -> tuple[int, int]:
    """(CPU ns, run-queue wait ns) summed over the live threads of ``pid``."""
    per = threads(pid).values()
    return sum(c for c, _ in per), sum(w for _, w in per)


class Server:
    """`kiln lsp` over stdio, read synchronously: requests wait for their own answer."""

    def __init__(
        self, root: Path, checkout: Path, log: Path, profile: Path | None, trace: Path | None
    ) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(PYTHONPATH=str(checkout), KILN_HOME=str(root.parent / "kiln-home"))
        self.stderr = log.open("wb")
        command = [sys.executable, "-m", "lsp_server", "lsp"]
        if profile is not None:
            command = [sys.executable, str(ROOT / "bench" / "profiled_server.py"), str(profile)]
        if trace is not None:
            command = [sys.executable, str(ROOT / "bench" / "traced_server.py"), str(trace)]
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
            cwd=root, env=env, bufsize=0,
        )  # fmt: skip
        self._ids = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        self._ids += 1
        self.send({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        while True:
            message = self._read()
            if "method" in message:
                if "id" in message:  # a request of the server's (progress, configuration)
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if message.get("id") == self._ids:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")

    def _read(self) -> dict[str, Any]:
        out = self.proc.stdout
        assert out is not None
        length = 0
        while True:
            line = out.readline()
            if not line:
                raise RuntimeError("kiln lsp closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        body = b""
        while len(body) < length:
            chunk = out.read(length - len(body))
            if not chunk:
                raise RuntimeError("kiln lsp closed its output")
            body += chunk
        return dict(json.loads(body))

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - a bench: make sure it goes
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def prepare(corpus: Path, work: Path, checkout: Path) -> Path:
    base, run = work / "base", work / "run"
    if not (base / ".kiln" / "index.db").exists():
        shutil.rmtree(base, ignore_errors=True)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".kiln")
        shutil.copytree(corpus, base, ignore=ignore, symlinks=True)
        subprocess.run(
            [sys.executable, "-m", "lsp_server", "index", str(base)],
            env={**os.environ, "PYTHONPATH": str(checkout)}, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(base, run, symlinks=True)
    return run


def session(run: Path, checkout: Path, plans: list[tuple], args: argparse.Namespace) -> dict:
    """One server from ``checkout`` on a fresh copy at ``run``: every edit and its figures."""
    server = Server(run, checkout, args.work / "server.log", args.profile, args.trace)
    rows: dict[str, list[float]] = {k: [] for k in ("wall", "cpu", "wait", "swall", "scpu")}
    windows: list[tuple[int, int, dict, dict]] = []  # per edit, for --trace
    misses = 0
    try:
        server.request("initialize", {"processId": os.getpid(), "rootUri": run.as_uri(),
                                      "capabilities": {}})  # fmt: skip
        server.notify("initialized", {})
        while server.request("kiln/index/status", {})["state"] != "ready":
            time.sleep(0.05)
        for rel, text, spots in plans:
            uri = (run / rel).as_uri()
            doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
            server.notify("textDocument/didOpen", {"textDocument": doc})
            lines = text.count("\n") + 1
            for n, (i, indent) in enumerate(spots):  # bottom-up: line numbers stay valid
                marker = f"kiln_typed_{n}_{lines}"
                lines += 1
                at = {"line": i, "character": 0}
                change = {"range": {"start": at, "end": at}, "text": f"{indent}{marker} = {n}\n"}
                hover = {"textDocument": {"uri": uri},
                         "position": {"line": i, "character": len(indent) + 1}}  # fmt: skip
                for key in ("", "s"):  # the edit and its search, then the search alone
                    before = threads(server.proc.pid)
                    cpu, wait = (
                        sum(c for c, _ in before.values()),
                        sum(w for _, w in before.values()),
                    )
                    started = time.perf_counter_ns()
                    if not key:
                        server.notify(
                            "textDocument/didChange",
                            {"textDocument": {"uri": uri, "version": n + 2},
                             "contentChanges": [change]},
                        )  # fmt: skip
                    answer = server.request("textDocument/hover", hover)
                    ended = time.perf_counter_ns()
                    wall = ended - started
                    after = threads(server.proc.pid)
                    cpu2, wait2 = (
                        sum(c for c, _ in after.values()),
                        sum(w for _, w in after.values()),
                    )
                    if not key:
                        windows.append((started, ended, before, after))
                    rows[key + "wall"].append(wall / 1e6)
                    rows[key + "cpu"].append((cpu2 - cpu) / 1e6)
                    if not key:
                        rows["wait"].append((wait2 - wait) / 1e6)
                        value = (answer or {}).get("contents", {}).get("value", "")
                        misses += not any(
                            where == rel and int(line) <= i + 1
                            for where, _, line in (
                                hit.rsplit("`", 2)[-2].rpartition(":") for hit in value.splitlines()
                            )
                        )
            server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    finally:
        server.close()
    if args.trace is not None:
        trace_report(args.trace, windows[1:])  # the first edit chunks the whole file
    return {"rows": rows, "misses": misses}


TRACE_STEPS = [  # (label, from, to): the first ``to`` after the first ``from`` in an edit
    ("didChange and hover read (loop)", "sent", "hover>"),
    ("loop -> index thread", "flush>", "write>"),
    ("update_file", "update_file>", "update_file<"),
    ("index thread -> search thread", "write<", "search>"),
    ("search", "search>", "search<"),
    ("search thread -> answer out (loop)", "search<", "send<"),
    ("answer read by the bench", "send<", "answered"),
    ("edit -> searchable", "sent", "answered"),
]


def trace_report(path: Path, windows: list[tuple[int, int, dict, dict]]) -> None:
    """Where each edit's wall clock went, from ``traced_server.py``'s notes (see there)."""
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        t, tid, cpu, name = line.split()
        events.append((int(t), int(tid), int(cpu), name))
    events.sort()
    role: dict[int, str] = {}
    first_step = {"receive>": "event loop", "update_file>": "index thread", "search>": "search"}
    for _, tid, _, name in events:
        if name in first_step and tid not in role:
            role[tid] = first_step[name] + (" threads" if name == "search>" else "")
    wall: dict[str, list[float]] = {label: [] for label, _, _ in TRACE_STEPS}
    wall.update((who, []) for who in ("event loop", "index thread", "search threads"))
    cpu: dict[str, list[float]] = {}
    for started, ended, before, after in windows:
        mine = [(started, 0, 0, "sent")]
        mine += [e for e in events if started <= e[0] <= ended] + [(ended, 0, 0, "answered")]
        for label, a, b in TRACE_STEPS:
            x = next((e for e in mine if e[3] == a), None)
            y = next((e for e in mine if x is not None and e[3] == b and e[0] >= x[0]), None)
            if x is not None and y is not None:
                wall.setdefault(label, []).append((y[0] - x[0]) / 1e6)
                if x[1] == y[1] and x[1]:
                    cpu.setdefault(label, []).append((y[2] - x[2]) / 1e6)
        spent: dict[str, list[float]] = {}
        for tid, (ran, waited) in after.items():
            ran0, waited0 = before.get(tid, (0, 0))
            got = spent.setdefault(role.get(tid, "other threads"), [0.0, 0.0])
            got[0] += (ran - ran0) / 1e6
            got[1] += (waited - waited0) / 1e6
        for who, (ran, waited) in spent.items():
            wall.setdefault(who, []).append(waited)
            cpu.setdefault(who, []).append(ran)
    print(f"  where the wall clock went ({len(windows)} edits, the session's first left out):")
    for label, values in wall.items():
        if not values:
            continue
        if label in role.values() or label == "other threads":
            ran = cpu[label]
            line = f"    {label:38s} ran  p50 {pct(ran, 50):6.2f} p95 {pct(ran, 95):6.2f} ms"
            line += f"   waited for a CPU p50 {pct(values, 50):6.2f} p95 {pct(values, 95):6.2f}"
        else:
            line = f"    {label:38s} wall p50 {pct(values, 50):6.2f} p95 {pct(values, 95):6.2f} ms"
            line += f" mean {sum(values) / len(values):6.2f}"
            if cpu.get(label):
                line += f"   CPU p50 {pct(cpu[label], 50):6.2f} p95 {pct(cpu[label], 95):6.2f} ms"
        print(line)


def report(checkout: Path, rows: dict[str, list[float]], misses: int, edits: str) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"kiln lsp from {checkout}; {edits}, the typed name not found by its hover: {misses};"
        f" load average {load} (1, 5, 15 min)"
    )
    for label, key in (
        ("edit -> searchable, wall", "wall"),
        ("  server CPU", "cpu"),
        ("  server threads waiting for a CPU", "wait"),
        ("search alone (no edit), wall", "swall"),
        ("  server CPU", "scpu"),
    ):
        values = rows[key]
        print(f"  {label:36s} p50 {pct(values, 50):6.2f} ms  p95 {pct(values, 95):6.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True, help="base index and run copy go here")
    ap.add_argument(
        "--checkout", type=Path, action="append", default=[],
        help="the Kiln tree the server runs (this one by default); give several to alternate",
    )  # fmt: skip
    ap.add_argument("--rounds", type=int, default=1, help="sessions per checkout, alternating")
    ap.add_argument("--large", type=int, default=3)
    ap.add_argument("--typing", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--profile", type=Path, default=None, help="cProfile every server thread into this folder"
    )
    ap.add_argument(
        "--trace", type=Path, default=None, help="note each step's time in this file and report"
    )
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"lsp_edit: not a folder: {args.corpus}")
    checkouts = [c.resolve() for c in args.checkout] or [ROOT]
    sys.path[:0] = [str(ROOT)]
    from bench.index_speed import typing_plans
    from indexer import Index

    run = prepare(args.corpus, args.work, checkouts[0])
    with Index(run) as idx:
        plans = typing_plans(idx, run, random.Random(args.seed), args.large, args.typing)
    pooled: dict[Path, dict] = {c: {"rows": {}, "misses": 0} for c in checkouts}
    for round_ in range(args.rounds):
        for checkout in checkouts:
            if round_ or checkout != checkouts[0]:
                run = prepare(args.corpus, args.work, checkout)
            got = session(run, checkout, plans, args)
            report(checkout, got["rows"], got["misses"], f"round {round_ + 1}")
            pooled[checkout]["misses"] += got["misses"]
            for key, values in got["rows"].items():
                pooled[checkout]["rows"].setdefault(key, []).extend(values)
    if args.rounds > 1:
        print("pooled:")
        for checkout, got in pooled.items():
            edits = f"{len(got['rows']['wall'])} edits over {args.rounds} rounds"
            report(checkout, got["rows"], got["misses"], edits)


if __name__ == "__main__":
    main()
