"""Peak memory of a process and its children while they run, sampled from /proc (Linux): the
sum of their RSS at one instant (pages a forked worker shares with its parent are counted in
each), the same as PSS (shared pages split between the processes), and the largest one."""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys


class MemorySampler:
    """Peaks for ``pid`` and its children, sampled by a separate process (a thread here would
    make the indexer, on Python 3.12+, parse in-process rather than fork workers)."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        self.pid, self.every = pid, every
        self.peak_rss = self.peak_pss = self.peak_one = self.peak_procs = 0
        self.cpu = 0.0  # CPU seconds the sampler process used (a child of ``pid``)

    def __enter__(self) -> MemorySampler:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, str(self.pid), str(self.every)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._proc.stdout.readline()  # "ready": sampling has started
        return self

    def __exit__(self, *exc: object) -> None:
        out, _ = self._proc.communicate("")
        peaks = json.loads(out)
        self.peak_rss, self.peak_pss = peaks["rss"], peaks["pss"]
        self.peak_one, self.peak_procs = peaks["one"], peaks["procs"]
        self.cpu = peaks["cpu"]


def sample(pid: int, every: float) -> dict[str, float]:
    """Sample until stdin closes; peaks in kB (this sampler's own process left out), and the
    CPU seconds the sampling itself took (callers subtract them from what they measure).
    PSS is read only near a new RSS peak: reading it walks the page tables (costly)."""
    peaks: dict[str, float] = {"rss": 0, "pss": 0, "one": 0, "procs": 0}
    me = os.getpid()
    print("ready", flush=True)
    while True:
        pids = [pid, *(c for c in _children(pid) if c != me)]
        rss = [_status_kb(p, "VmRSS:") for p in pids]
        if sum(rss) >= 0.9 * peaks["rss"]:
            peaks["pss"] = max(peaks["pss"], sum(_pss_kb(p) for p in pids))
        peaks["rss"] = max(peaks["rss"], sum(rss))
        peaks["one"] = max(peaks["one"], *rss)
        peaks["procs"] = max(peaks["procs"], len(pids))
        ready, _, _ = select.select([sys.stdin], [], [], every)
        if ready and not sys.stdin.read(1):
            usage = resource.getrusage(resource.RUSAGE_SELF)
            peaks["cpu"] = usage.ru_utime + usage.ru_stime
            return peaks


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out.extend(int(c) for c in fh.read().split())
    except OSError:
        pass
    return out


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    print(json.dumps(sample(int(sys.argv[1]), float(sys.argv[2]))))
