"""`$/cancelRequest` on each kind of request that waits on something slow (a model server, a
registry, the models list), sent while it waits: each is answered exactly once, -32800 or its
result; a cancel for a request already answered adds nothing; the session is not left busy."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer
from tests.waiting import until

pytestmark = pytest.mark.e2e


@contextlib.contextmanager
def silent_server() -> Iterator[tuple[str, Callable[[], int]]]:
    """A loopback HTTP address that accepts connections and never answers, and a function
    counting the connections made to it so far."""
    accepted: list[socket.socket] = []
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        silent.setblocking(False)

        def count() -> int:
            with contextlib.suppress(BlockingIOError):
                while True:
                    accepted.append(silent.accept()[0])
            return len(accepted)

        try:
            yield f"http://127.0.0.1:{silent.getsockname()[1]}", count
        finally:
            for conn in accepted:
                conn.close()


def _answers(server: RawServer, msg_id: Any) -> list[dict[str, Any]]:
    return [m for m in server.messages if "method" not in m and m.get("id") == msg_id]


async def test_each_waiting_request_is_answered_once_and_the_session_goes_on(
    workspace: Path, kiln_home: Path
) -> None:
    with silent_server() as (url, connections):
        env = server_env(
            kiln_home, KILN_PROVIDER="openai", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=url + "/v1"
        )
        server = await RawServer.start(workspace, env)
        try:
            await server.initialize(workspace, initializationOptions={"index": False})
            sid = (await server.request("new", "kiln/session/new", {}))["result"]["sessionId"]
            waiting = {
                "prompt": ("kiln/session/prompt", {"sessionId": sid, "prompt": "hi"}),
                "search": ("kiln/skills/search", {"query": "x", "registry": url}),
                "install": ("kiln/skills/install", {"spec": "a/b", "registry": url}),
                "models": ("kiln/models/list", {}),
            }
            for msg_id, (method, params) in waiting.items():
                before = connections()
                server.request_nowait(msg_id, method, params)
                await until(lambda n=before: connections() > n, what=f"{method} connecting")
                server.notify("$/cancelRequest", {"id": msg_id})
                await server.response(msg_id)
            assert "result" in await server.request("done", "kiln/hello")
            server.notify("$/cancelRequest", {"id": "done"})  # already answered: nothing more
            # The session is not left busy: a new prompt runs (and is stopped the soft way).
            before = connections()
            server.request_nowait("next", "kiln/session/prompt", {"sessionId": sid, "prompt": "x"})
            await until(lambda: connections() > before, what="the next prompt's model call")
            server.notify("kiln/session/cancel", {"sessionId": sid})
            next_turn = await server.response("next")
            assert next_turn["result"]["stopReason"] == "cancelled", next_turn
            assert "result" in await server.request("last", "kiln/session/list", {})
        finally:
            await server.close()
    for msg_id in [*waiting, "done"]:
        answers = _answers(server, msg_id)
        assert len(answers) == 1, (msg_id, answers)
        (answer,) = answers
        if "error" in answer:
            assert answer["error"]["code"] == -32800 and "result" not in answer, answer
    prompt = _answers(server, "prompt")[0]
    assert "error" in prompt or prompt["result"]["stopReason"] == "cancelled", prompt
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
