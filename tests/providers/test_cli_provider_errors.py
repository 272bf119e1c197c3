"""What `kiln run` prints when the provider refuses: one line on stderr with the server's words
and what to do (the variable to check, how to start over), exit code 4, nothing retried that
would only fail again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e]


@pytest.mark.parametrize(
    ("step", "says"),
    [
        ({"error": 401, "message": "Incorrect API key provided"},
         "Incorrect API key provided (check OPENAI_API_KEY: the key was refused)"),
        ({"raw": {"body": "<html>Sign in</html>"}},
         "not an event stream (check that OPENAI_BASE_URL points at the openai API"),
        ({"error": 400, "message": "This model's maximum context length is 100 tokens."},
         "100 tokens. (the conversation no longer fits the model's context window: start a new "
         "session"),
    ],
    ids=["401", "html", "context"],
)  # fmt: skip
def test_provider_refusal_is_one_line_with_what_to_do(
    tmp_path: Path, step: dict[str, Any], says: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    with WireServer([step] * 4) as srv:
        env.update(OPENAI_API_KEY="sk-bad", OPENAI_BASE_URL=srv.openai_base_url,
                   KILN_PROVIDER="openai")  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "go", "--root", str(tmp_path)],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert proc.returncode == 4
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and says in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(srv.requests) == 1
