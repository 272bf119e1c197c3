"""What the command sandbox costs per command: each command run unconfined (`/bin/sh -c`) and
inside the session sandbox (bubblewrap), alternately, in the same process; prints the median and
the mean wall time of each and the difference.

    python -m bench.sandbox_overhead [--runs 30] [--json]

Commands: `true` (pure start-up cost), `python -c pass`, `git status` in a small repository and
`pytest -q` on one test file — the kinds of commands an agent runs to verify its work.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent.sandbox import Sandbox, find_backend, load_policy

TEST = "def test_add():\n    assert 1 + 1 == 2\n"


def make_repo(root: Path) -> None:
    (root / "test_calc.py").write_text(TEST)
    for i in range(20):
        (root / f"mod{i}.py").write_text(f"X = {i}\n")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(
            f"command failed ({proc.returncode}): {argv[-1]}\n{proc.stderr.decode()[-500:]}"
        )
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if find_backend() is None:
        raise SystemExit("no sandbox backend here (install bubblewrap)")
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "repo", Path(tmp) / "kiln_home"
        root.mkdir()
        home.mkdir()
        make_repo(root)
        sandbox = Sandbox(root, load_policy(root, home, "ask"), kiln_home=home)
        commands = {
            "true": "true",
            "python -c pass": f"{sys.executable} -c pass",
            "git status": "git status --short",
            "pytest one file": f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q "
            "-p no:cacheprovider test_calc.py",
        }
        env = sandbox.env()  # the same (scrubbed) environment for both, so only the sandbox differs
        rows = []
        for label, command in commands.items():
            plain, boxed = [], []
            for _ in range(args.runs):  # alternate, so drift in machine load hits both alike
                plain.append(timed(["/bin/sh", "-c", command], root, env))
                boxed.append(timed(sandbox.shell(command), root, env))
            rows.append({
                "command": label,
                "unsandboxed_median_ms": round(statistics.median(plain) * 1000, 1),
                "sandboxed_median_ms": round(statistics.median(boxed) * 1000, 1),
                "overhead_median_ms": round((statistics.median(boxed) - statistics.median(plain)) * 1000, 1),
                "unsandboxed_mean_ms": round(statistics.mean(plain) * 1000, 1),
                "sandboxed_mean_ms": round(statistics.mean(boxed) * 1000, 1),
            })  # fmt: skip
        sandbox.close()
    if args.json:
        print(json.dumps({"backend": find_backend()[0], "runs": args.runs, "rows": rows}, indent=2))  # type: ignore[index]
        return
    print(f"backend: {find_backend()[0]}; {args.runs} runs each, alternating")  # type: ignore[index]
    print(
        f"{'command':<18}{'plain ms':>10}{'sandbox ms':>12}{'overhead ms':>13}  (medians; means {'plain/sandbox'})"
    )
    for r in rows:
        print(
            f"{r['command']:<18}{r['unsandboxed_median_ms']:>10}{r['sandboxed_median_ms']:>12}"
            f"{r['overhead_median_ms']:>13}  ({r['unsandboxed_mean_ms']}/{r['sandboxed_mean_ms']})"
        )


if __name__ == "__main__":
    main()
