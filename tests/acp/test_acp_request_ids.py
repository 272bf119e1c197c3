"""A request id is the client's name for one request until it is answered (raw JSON-RPC against
a real `kiln acp`).

Two requests in flight under the same id were both served and both answered under that id, so
the client could not tell the answers apart and `$/cancel_request` of that id named either.
JSON-RPC wants ids unique among a client's requests not answered yet: the second is refused with
-32600 naming the id and does not run; the first goes on, and the id is free once answered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp.test_acp_after_cancel import is_plan, kiln_acp, prompt, running

pytestmark = pytest.mark.e2e


async def test_a_second_request_under_an_id_in_flight_is_refused_and_not_run(
    kiln_home: Path, tmp_path: Path, workspace: Path
) -> None:
    async with kiln_acp(kiln_home, running(tmp_path / "never"), tmp_path) as wire:
        sid = await wire.new_session(workspace)
        wire.send(prompt(3, sid, "first"))
        await wire.until(is_plan)  # the turn under id 3 is running
        new = {"cwd": str(workspace), "mcpServers": []}
        wire.send({"id": 3, "method": "session/new", "params": new})
        refused = await wire.answer(3)
        assert refused.get("error", {}).get("code") == -32600, refused
        assert "request id 3 is already in use" in refused["error"]["message"], refused
        wire.send({"method": "$/cancel_request", "params": {"requestId": 3}})
        first = await wire.until(lambda m: m.get("id") == 3 and m is not refused)
        assert first.get("result", {}).get("stopReason") == "cancelled", first
        wire.send({"id": 3, "method": "session/list", "params": {}})  # answered: free again
        listed = await wire.until(lambda m: m.get("id") == 3 and m not in (refused, first))
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [sid], listed  # no new one
    assert [m.get("id") for m in wire.seen].count(3) == 3, wire.seen


async def test_a_null_id_in_flight_is_an_id_in_use_too(
    kiln_home: Path, tmp_path: Path, workspace: Path
) -> None:
    """ACP's `RequestId` allows null, and a request under null was served; a second one under
    null while the first ran was served as well, and the two answers could not be told apart."""
    async with kiln_acp(kiln_home, running(tmp_path / "never"), tmp_path) as wire:
        sid = await wire.new_session(workspace)
        wire.send(prompt(None, sid, "first"))  # type: ignore[arg-type]
        await wire.until(is_plan)  # the turn under id null is running
        wire.send({"id": None, "method": "session/list", "params": {}})
        refused = await wire.until(lambda m: "id" in m and m["id"] is None and "method" not in m)
        assert refused.get("error", {}).get("code") == -32600, refused
        assert "request id null is already in use" in refused["error"]["message"], refused
        wire.send({"method": "session/cancel", "params": {"sessionId": sid}})
        first = await wire.until(lambda m: "id" in m and m["id"] is None and m is not refused)
        assert first.get("result", {}).get("stopReason") == "cancelled", first
        wire.send({"id": None, "method": "session/list", "params": {}})  # answered: free again
        listed = await wire.until(
            lambda m: "id" in m and m["id"] is None and m not in (refused, first)
        )
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [sid], listed
