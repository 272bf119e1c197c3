"""Kiln installed into the project's own ``.venv`` (docs/security.md section 4, "read-only
again"): a sandboxed command must not plant a ``.pth`` file or ``sitecustomize.py`` there, which
Kiln's next process would run on the host with the keys the sandbox keeps from commands. Through
the real `kiln run`, started by the workspace's venv interpreter."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def test_commands_cannot_plant_code_in_the_environment_kiln_runs_from(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # Kiln and its dependencies come from the environment running this test, its own .pth files
    # (an editable install's finder) included, and from this checkout.
    dirs = [*site.getsitepackages(), str(Path(__file__).resolve().parents[2])]
    (Path(purelib) / "deps.pth").write_text(f"import site; list(map(site.addsitedir, {dirs!r}))\n")
    marker = host_dir / "ran-in-kiln"
    rel = Path(purelib).relative_to(root)
    payload = f"import os; open({str(marker)!r}, 'a').write('ran')"
    steps = [
        f"echo {json.dumps(payload)} > {rel}/zz-evil.pth",
        f"echo {json.dumps(payload)} > {rel}/sitecustomize.py",
        f"mv .venv .venv-old && cp -r .venv-old .venv && echo {json.dumps(payload)} > {rel}/zz.pth",
    ]
    script = tmp_path / "script.json"
    calls = [{"tool_calls": [{"name": "run_command", "input": {"command": c}}]} for c in steps]
    script.write_text(json.dumps([*calls, "done"]))
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home),
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    proc = subprocess.run(
        [python, "-m", "lsp_server", "run", "--mode", "yolo", "--output-format", "json", "go"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    results = json.dumps(tool_results(Path(out["transcript"])))
    assert results.count("exit code 0") == 0, results  # every plant failed
    subprocess.run([python, "-c", "pass"], env=env, check=True)  # Kiln's next start
    assert not marker.exists()
