"""What Kiln's ACP agent takes from the Python SDK beyond the Agent/Client methods, checked
against the installed SDK so that an SDK release that changes it fails here, by name, rather
than silently (docs/acp.md, `$/cancel_request` agent → client).

The withdrawal of an abandoned request read the SDK connection's private `_conn` attribute
and, without it, withdrew nothing and said nothing. It now uses only public seams: the
`observers` argument `AgentSideConnection` passes to `acp.connection.Connection`, and Kiln's own
protocol stream."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

from acp.core import AgentSideConnection

from lsp_server.acp.outgoing import CANCEL_REQUEST, OutgoingRequests

ACP_PACKAGE = Path(__file__).resolve().parents[2] / "lsp_server" / "acp"


class _NoAgent:
    """An agent that is never asked anything: the test only sends requests to the client."""


async def _frames(reader: asyncio.StreamReader, count: int) -> list[dict[str, Any]]:
    return [json.loads(await asyncio.wait_for(reader.readline(), 60)) for _ in range(count)]


async def test_an_abandoned_request_is_withdrawn_through_public_sdk_seams() -> None:
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    client_reader, client_writer = await asyncio.open_connection(sock=theirs)
    outgoing = OutgoingRequests()
    conn = AgentSideConnection(
        _NoAgent(), writer, reader, listening=True, observers=outgoing.connect(writer)
    )
    try:
        asked = asyncio.ensure_future(_ask(conn, outgoing))
        [request] = await _frames(client_reader, 1)
        assert request["method"] == "fs/read_text_file"
        asked.cancel()  # Kiln stops waiting (a cancelled turn); the client never answered
        [withdrawal] = await _frames(client_reader, 1)
        assert withdrawal == {
            "jsonrpc": "2.0",
            "method": CANCEL_REQUEST,
            "params": {"requestId": request["id"]},
        }
    finally:
        await conn.close()
        client_writer.close()


async def _ask(conn: AgentSideConnection, outgoing: OutgoingRequests) -> None:
    async with outgoing.withdrawn_if_abandoned():
        await conn.read_text_file(path="/w/a.py", session_id="s")


def test_the_acp_package_reads_no_private_attribute_of_the_sdk() -> None:
    for source in ACP_PACKAGE.glob("*.py"):
        text = source.read_text(encoding="utf-8")
        assert '"_conn"' not in text and "._conn" not in text, source.name
