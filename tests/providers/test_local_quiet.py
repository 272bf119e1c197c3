"""llama.cpp's own log lines stay off the terminal: `kiln run` prints one line per failure and
`kiln lsp`/`kiln acp` keep stderr for their log. Before, cancelling a turn on the embedded model
(Ctrl-C, session/cancel) printed llama.cpp's "decode: removing memory module entries ..." to
stderr, whatever Kiln's log level."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.providers import local_available

ROOT = Path(__file__).resolve().parents[2]

CANCEL_MID_PROMPT = """
import asyncio
from agent.providers.local import LocalModel
from tests.providers.helpers import collect, make_request
from tests.waiting import until
from agent.types import user_message

async def main():
    model = LocalModel(max_tokens=8, n_threads=1)
    words = " ".join(f"line {i} of the build log says step {i * 7} passed" for i in range(600))
    loaded = await asyncio.to_thread(model._llama)
    turn = asyncio.ensure_future(collect(model.stream(make_request(user_message(words)))))
    await until(loaded.lock.locked, what="the generation to start")
    await until(lambda: loaded.llama.n_tokens > 0 or turn.done(), what="evaluation to start")
    turn.cancel()
    try:
        await turn
    except asyncio.CancelledError:
        print("cancelled")

asyncio.run(main())
"""


@pytest.mark.local_model
@pytest.mark.slow
def test_a_cancelled_generation_prints_nothing_of_llama_cpp(tmp_path: Path) -> None:
    if not local_available():
        pytest.skip("the local extra is not installed: pip install 'kiln-agent[local]'")
    proc = subprocess.run(
        [sys.executable, "-c", CANCEL_MID_PROMPT], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600,
    )  # fmt: skip
    assert proc.stdout.strip() == "cancelled", proc.stdout + proc.stderr
    assert proc.stderr == "", proc.stderr
