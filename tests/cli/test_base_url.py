"""A base URL without a scheme (`OPENAI_BASE_URL=localhost:11434/v1`) is a configuration
mistake: one line naming the variable and exit code 2 before any request, not four attempts
reported as a dropped connection and the provider-failure exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    "env",
    [
        {"OPENAI_BASE_URL": "localhost:11434/v1"},
        {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "127.0.0.1:8080"},
    ],
)
def test_a_base_url_without_a_scheme_is_a_usage_error(tmp_path: Path, env: dict) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--output-format", "json", "hello"],
        cwd=tmp_path, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    var = next(k for k in env if k.endswith("_BASE_URL"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and var in proc.stderr, proc.stderr
    assert "retry" not in proc.stderr
    result = json.loads(proc.stdout)  # the refused run's result (docs/ci.md)
    assert result["is_error"] is True and result["error"] == proc.stderr.strip()[len("kiln: ") :]


@pytest.mark.parametrize(
    "env",
    [
        lambda srv: {"OPENAI_BASE_URL": srv.openai_base_url},  # picks openai by itself
        lambda srv: {"KILN_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": srv.url},
    ],
)
def test_a_server_that_needs_no_key_is_reached_without_one(tmp_path: Path, env) -> None:
    """README: a base URL points the SDK at a local server, and one that needs no key works
    without one, as `python -m agent.testing.wire_server` does."""
    from agent.testing.wire_server import WireServer

    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("KILN_", "ANTHROPIC_", "OPENAI_", "AZURE_"))}  # fmt: skip
    (tmp_path / "work").mkdir()
    with WireServer(["the answer"]) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "hello"],
            cwd=tmp_path / "work", env={**clean, "KILN_HOME": str(tmp_path / "home"), **env(srv)},
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "the answer" and len(srv.requests) == 1
