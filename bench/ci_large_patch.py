"""Time and peak memory of `kiln run --ci` after a command wrote one large random file (a change
too large for a patch): the run should stop with one line, exit 3 and bounded memory, not build a
patch of the whole file. Prints one line per Kiln tree given (default: this one), so a tree
before the bound can be measured beside it in the same run.

    python bench/ci_large_patch.py --mb 200 [--tree /path/to/other/checkout ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(tree: Path, megabytes: int) -> str:
    tmp = Path(tempfile.mkdtemp(prefix="kiln-bench-patch-", dir="/var/tmp"))
    try:
        root = tmp / "repo"
        root.mkdir()
        for args in (["init", "-q"], ["add", "-A"],
                     ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "i"]):  # fmt: skip
            (root / "a.txt").write_text("a\n")
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
        write = ("python3 -c \"import os; f = open('big.bin', 'wb'); "
                 f"[f.write(os.urandom(1 << 20)) for _ in range({megabytes})]\"")  # fmt: skip
        steps = [{"tool_calls": [{"name": "run_command", "input": {"command": write}}]}, "done"]
        (tmp / "script.json").write_text(json.dumps(steps))
        env = {**os.environ, "PYTHONPATH": str(tree), "HOME": str(tmp),
               "KILN_HOME": str(tmp / "kiln-home"), "KILN_PROVIDER": "scripted",
               "KILN_SCRIPT": str(tmp / "script.json")}  # fmt: skip
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format", "json",
             "--artifacts", str(tmp / "artifacts"), "go"],
            cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        err = proc.stderr
        seconds = time.monotonic() - started
        # this process measures one tree (main() starts one per tree), so this is its run's
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        patch = tmp / "artifacts" / "changes.patch"
        size = patch.stat().st_size / 2**20 if patch.exists() else 0
        last = err.strip().splitlines()[-1][:100] if err.strip() else ""
        return (f"{tree}: exit {proc.returncode}, {seconds:.1f} s, largest process {peak:.0f} MB RSS, "
                f"patch {size:.0f} MB  {last}")  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the file the command writes")
    parser.add_argument("--tree", action="append", type=Path, default=[],
                        help="a Kiln checkout to measure (repeatable; default: this one)")  # fmt: skip
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(measure(args.one, args.mb), flush=True)
        return
    for tree in args.tree or [Path(__file__).resolve().parents[1]]:
        subprocess.run(
            [sys.executable, __file__, "--one", str(tree.resolve()), "--mb", str(args.mb)]
        )


if __name__ == "__main__":
    main()
