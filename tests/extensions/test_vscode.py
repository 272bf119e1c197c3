"""The VS Code extension's own suite (`npm test`: tsc, vitest, and `node --test` against a real
`kiln lsp`), run from pytest so the project's single test command covers the TypeScript too.

The Node integration test starts `python -m lsp_server lsp` with this interpreter
(``KILN_PYTHON``), so it exercises the Kiln that is installed here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.npm import holding, npm_ci

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXTENSION = Path(__file__).resolve().parents[2] / "extensions" / "vscode"


def _npm() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm are not installed: the VS Code extension's tests need Node 20+")
    return npm


def _env(kiln_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(KILN_PYTHON=sys.executable, KILN_HOME=str(kiln_home), CI="1", NO_COLOR="1")
    return env


def test_extension_suite_passes(kiln_home: Path) -> None:
    npm = _npm()
    env = _env(kiln_home)
    with holding(EXTENSION):  # `npm test` rebuilds dist/, which the webview tests load
        npm_ci(npm, EXTENSION, EXTENSION / "node_modules" / ".bin" / "vitest", env)
        result = subprocess.run(
            [npm, "test"], cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=600
        )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]
    # The three parts each ran and reported success.
    assert "Test Files" in output and "failed" not in output.split("Test Files")[1][:80]
    assert "ℹ fail 0" in output and "ℹ pass" in output
    assert "Traceback" not in output
