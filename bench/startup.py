"""What a short `kiln` process costs from start to exit: most end-to-end tests start one (a
scripted `kiln run`, `kiln search`, `kiln index`, `kiln mcp list`, a `kiln lsp` or `kiln acp`
server, a `kiln run` through the anthropic or openai SDK against the scripted wire server), so
this is what the suite pays per test. The servers read an empty stdin and end: their start-up
alone. Each command runs N times in a small git repository with a fresh `KILN_HOME`,
round-robin with a bare `python -c "import lsp_server"` (the floor), so a busy machine slows
all of them alike; prints the median wall time, the median CPU time (user + system of the
child) and the CPU time as a ratio to the floor's.

    python -m bench.startup [--runs 10] [--compare DIR] [--json]

`--compare DIR` runs the same commands again from another checkout (put first on PYTHONPATH,
e.g. a `git worktree` of main) in the same rounds: before and after, on one machine, at once.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

from agent.testing.wire_server import WireServer

SOURCE = "def greet(name):\n    return f'hello {name}'\n\n\nclass Greeter:\n    pass\n"
COMMANDS: dict[str, list[str]] = {
    "import lsp_server (floor)": ["-c", "import lsp_server"],
    "kiln --help": ["-m", "lsp_server", "--help"],
    "kiln run (scripted)": ["-m", "lsp_server", "run", "--mode", "yolo", "--output-format",
                            "stream-json", "hi"],
    "kiln run (scripted, 1 tool)": ["-m", "lsp_server", "run", "--mode", "yolo",
                                    "--output-format", "stream-json", "read"],
    "kiln index": ["-m", "lsp_server", "index"],
    "kiln search": ["-m", "lsp_server", "search", "greet"],
    "kiln mcp list": ["-m", "lsp_server", "mcp", "list"],
    "kiln lsp (start, end)": ["-m", "lsp_server", "lsp"],
    "kiln acp (start, end)": ["-m", "lsp_server", "acp"],
    "kiln run (anthropic SDK)": ["-m", "lsp_server", "run", "--mode", "yolo", "--output-format",
                                 "json", "hi"],
    "kiln run (openai SDK)": ["-m", "lsp_server", "run", "--mode", "yolo", "--output-format",
                              "json", "hi"],
}  # fmt: skip
FLOOR = "import lsp_server (floor)"


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def make_repo(root: Path) -> None:
    (root / "greet.py").write_text(SOURCE)
    (root / "README.md").write_text("# demo\n")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process (CPU from this process's child rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [""])[-1][:300]
        fail(f"{' '.join(argv[1:])} exited {proc.returncode}: {last}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def environment(work: Path, checkout: Path, name: str) -> dict[str, str]:
    home = work / f"home-{name}"
    home.mkdir()
    script = work / "script.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]),
        "KILN_HOME": str(home),
        "KILN_PROVIDER": "scripted",
        "KILN_SCRIPT": str(script),
    }
    # Measured as an installed Kiln runs: from bytecode, which the warm-up round writes.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def sdk(command: str, env: dict[str, str], wire: WireServer) -> dict[str, str]:
    """``env`` for a run through a provider's real SDK (the scripted wire server answers)."""
    if "anthropic SDK" in command:
        env = {**env, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": wire.anthropic_base_url}
    elif "openai SDK" in command:
        env = {**env, "OPENAI_BASE_URL": wire.openai_base_url}
    else:
        return env
    env.pop("KILN_PROVIDER")
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--compare", type=Path, help="another checkout, measured alongside")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs < 1:
        fail("--runs takes a whole number from 1")
    if args.compare is not None and not (args.compare / "lsp_server").is_dir():
        fail(f"--compare {args.compare}: no lsp_server package there")
    checkouts = {"this": Path(__file__).resolve().parents[1]}
    if args.compare is not None:
        checkouts["compare"] = args.compare.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = work / "repo"
        repo.mkdir()
        make_repo(repo)
        # the "1 tool" runs call read_file once, then finish
        read = {"tool_calls": [{"name": "read_file", "input": {"path": "greet.py"}}]}
        envs = {name: environment(work, path, name) for name, path in checkouts.items()}
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        rounds = args.runs + 1  # round 0 warms up: the index, bytecode caches
        with WireServer(["hello"] * rounds * 2 * len(envs)) as wire:
            for round_ in range(rounds):
                for command, argv in COMMANDS.items():
                    for name, env in envs.items():
                        script = [read, "done"] if command.endswith("1 tool)") else ["done"]
                        (work / "script.json").write_text(json.dumps(script))
                        sample = timed([sys.executable, *argv], repo, sdk(command, env, wire))
                        if round_:
                            samples.setdefault((name, command), []).append(sample)
    report(samples, envs, args.json)


def report(
    samples: dict[tuple[str, str], list[tuple[float, float]]],
    envs: dict[str, dict[str, str]],
    as_json: bool,
) -> None:
    rows: list[dict[str, Any]] = []
    for (name, command), values in samples.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        floor = statistics.median(v[1] for v in samples[(name, FLOOR)])
        rows.append({"checkout": name, "command": command, "wall_s": round(wall, 3),
                     "cpu_s": round(cpu, 3), "cpu_vs_floor": round(cpu / max(floor, 1e-3), 2)})  # fmt: skip
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'command':30} {'checkout':9} {'wall s':>7} {'cpu s':>7} {'cpu/floor':>9}")
    for row in sorted(rows, key=lambda r: (list(COMMANDS).index(r["command"]), r["checkout"])):
        print(f"{row['command']:30} {row['checkout']:9} {row['wall_s']:7.3f} {row['cpu_s']:7.3f} "
              f"{row['cpu_vs_floor']:9.2f}")  # fmt: skip
    if len(envs) == 2:
        for command in COMMANDS:
            this = next(r for r in rows if r["command"] == command and r["checkout"] == "this")
            other = next(r for r in rows if r["command"] == command and r["checkout"] == "compare")
            print(f"{command:30} cpu this/compare {this['cpu_s'] / max(other['cpu_s'], 1e-3):.2f}")


if __name__ == "__main__":
    main()
