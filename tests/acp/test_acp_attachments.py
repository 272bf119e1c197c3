"""A prompt whose attached file is read through the client (`fs/read_text_file`) is a turn from
the moment it is accepted: one turn at a time per session, and a cancel stops it, also while
the agent still waits for the client's text (docs/acp.md, `session/prompt`, `session/cancel`)."""

from __future__ import annotations

import asyncio
import base64
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import ReadTextFileResponse

from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


@dataclass
class SlowEditor(EditorClient):
    """Answers `fs/read_text_file` only when the test releases it (or never)."""

    reading: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def read_text_file(self, session_id: str, path: str, **kw: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        self.reading.set()
        await self.release.wait()
        return ReadTextFileResponse(content="the client's text of app.py\n")


def linked(workspace: Path, text: str) -> list[dict[str, Any]]:
    link = {"type": "resource_link", "uri": (workspace / "app.py").as_uri(), "name": "app.py"}
    return [{"type": "text", "text": text}, link]


async def test_a_prompt_reading_its_attachment_is_already_the_running_turn(
    spawn, workspace: Path
) -> None:
    """A second prompt sent while the first waited for its attachment ran a turn of its own,
    and then the first ran too: two turns at once in one session."""
    client = SlowEditor()
    async with spawn(["first answer", "second answer"], client) as agent:
        await agent.start(fs=True)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        first = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=linked(workspace, "a"))
        )
        await asyncio.wait_for(client.reading.wait(), 60)
        with pytest.raises(RequestError) as busy:
            await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "b"}])
        assert busy.value.code == -31002
        client.release.set()
        assert (await asyncio.wait_for(first, 60)).stop_reason == "end_turn"
    assert client.text() == "first answer"


async def test_a_cancel_while_the_attachment_is_read_stops_the_turn(spawn, workspace: Path) -> None:
    """The cancel came before the turn had started, and was lost: the turn ran to `end_turn`
    once the client answered. Now the prompt answers `cancelled` at once, without waiting for
    an answer the client may never send, and the model is not called."""
    client = SlowEditor()
    async with spawn(["the only reply"], client) as agent:
        await agent.start(fs=True)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        turn = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=linked(workspace, "a"))
        )
        await asyncio.wait_for(client.reading.wait(), 60)
        await agent.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"
        client.release.set()  # the late answer to the abandoned read changes nothing
        again = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "b"}])
        assert again.stop_reason == "end_turn"
    assert client.text() == "the only reply"  # the cancelled turn did not call the model


class MalformedReads(EditorClient):
    async def read_text_file(self, session_id: str, path: str, **kw: Any) -> Any:
        self.reads.append(path)
        return {"content": 5}  # not a ReadTextFileResponse


async def test_a_malformed_fs_answer_reads_the_disk_instead(spawn, workspace: Path) -> None:
    """A malformed answer to `fs/read_text_file` failed the whole prompt with -32602 "Invalid
    params", blaming the client's (valid) prompt; it is now a failed read, as an error answer
    is: the attachment and the tool call read the disk, and the turn goes on."""
    client = MalformedReads()
    read = {"text": "", "tool_calls": [{"name": "read_file", "input": {"path": "app.py"}}]}
    async with spawn([read, "read it"], client) as agent:
        await agent.start(fs=True)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=linked(workspace, "look"))
        assert result.stop_reason == "end_turn"
    assert len(client.reads) >= 2  # the attachment and the tool call both asked the client
    done = [u for u in client.updates if u.get("status") == "completed"]
    assert done and "return 'hello'" in done[0]["content"][0]["content"]["text"]  # the disk
    assert client.text() == "read it"


async def test_an_embedded_blob_resource_is_its_text_or_refused(spawn, workspace: Path) -> None:
    """An embedded resource may carry its content as a base64 `blob` (ACP's
    BlobResourceContents). Its content was ignored: the model got what the disk held under that
    URI, or an empty reference. Text is now decoded; binary content is -32602, as images are."""
    client = EditorClient()
    blob = base64.b64encode(b"text only the blob holds").decode()
    script = [{"match": "text only the blob holds", "text": "I read the blob"}]
    async with spawn(script, client) as agent:
        await agent.start(fs=False)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        uri = (workspace / "app.py").as_uri()  # the disk holds other text under this URI
        resource = {"uri": uri, "blob": blob, "mimeType": "text/x-python"}
        prompt = [{"type": "text", "text": "see"}, {"type": "resource", "resource": resource}]
        assert (await agent.conn.prompt(session_id=sid, prompt=prompt)).stop_reason == "end_turn"
        binary = {**resource, "blob": base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\xff").decode()}
        with pytest.raises(RequestError) as refused:
            await agent.conn.prompt(
                session_id=sid, prompt=[{"type": "resource", "resource": binary}]
            )
        assert refused.value.code == -32602 and "binary blob" in str(refused.value)
    assert client.text() == "I read the blob"


async def test_an_attached_fifo_or_huge_file_is_refused_not_waited_on(
    spawn, workspace: Path
) -> None:
    """A file the repository (or a command of an earlier turn) made a FIFO, or a sparse file of
    2 GB, attached with `@`: opening the FIFO waited for a writer forever on the agent's event
    loop, and the big file was read whole into memory. Both are -32602 with one line now, read
    as the file tools read (a regular file of at most 64 MB); a folder is still a bare link."""
    os.mkfifo(workspace / "notes.md")
    with (workspace / "huge.log").open("wb") as fh:
        fh.truncate(2 * 2**30)  # sparse: no disk space used
    (workspace / "docs").mkdir()
    client = EditorClient()
    async with spawn(["read the folder"], client) as agent:
        await agent.start(fs=False)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        for name, why in (("notes.md", "not a regular file"), ("huge.log", "larger than 64 MB")):
            link = {"type": "resource_link", "uri": (workspace / name).as_uri(), "name": name}
            with pytest.raises(RequestError) as refused:
                await asyncio.wait_for(agent.conn.prompt(session_id=sid, prompt=[link]), 60)
            assert refused.value.code == -32602 and why in str(refused.value), refused.value
        folder = {"type": "resource_link", "uri": (workspace / "docs").as_uri(), "name": "docs"}
        done = await agent.conn.prompt(session_id=sid, prompt=[folder])
        assert done.stop_reason == "end_turn"
    assert client.text() == "read the folder"
