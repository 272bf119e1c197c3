"""A server that sends its headers and then nothing: each attempt is abandoned after
``KILN_PROVIDER_TIMEOUT`` seconds, retried a bounded number of times, and `kiln run` ends with
one line and exit 4 instead of waiting forever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e]

STALL = {"raw": {"frames": [], "end": "stall"}}


def kiln_run(tmp_path: Path, srv: WireServer, timeout: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(KILN_PROVIDER="openai", OPENAI_BASE_URL=srv.openai_base_url,
               KILN_PROVIDER_TIMEOUT=timeout)  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "go", "--root", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_stalled_stream_is_abandoned_and_retried_a_bounded_number_of_times(
    tmp_path: Path,
) -> None:
    with WireServer([STALL] * 4) as srv:
        proc = kiln_run(tmp_path, srv, "0.5")
    assert proc.returncode == 4, proc.stderr
    assert "timed out (gave up after 4 attempts)" in proc.stderr
    assert len(srv.requests) == 4


@pytest.mark.parametrize("value", ["soon", "0", "-3", "inf"])
def test_a_bad_timeout_is_one_line(tmp_path: Path, value: str) -> None:
    with WireServer([]) as srv:
        proc = kiln_run(tmp_path, srv, value)
    assert proc.returncode == 2
    assert f"KILN_PROVIDER_TIMEOUT {value!r} is not a number of seconds above 0" in proc.stderr
    assert srv.requests == []
