"""The ACP frontend in process, against a recording client (the SDK connection's method shape)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import ClientCapabilities, FileSystemCapabilities, ReadTextFileResponse

from agent.errors import ToolError
from agent.events import ErrorReported, PlanUpdated, Refused, StatusNote, TurnDone
from agent.protocols import EditProposal
from lsp_server.acp import frontend as frontend_module
from lsp_server.acp.frontend import AcpFrontend, render_event


class RecordingClient:
    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files = files or {}
        self.sent: list[dict[str, Any]] = []
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []

    async def session_update(self, session_id: str, update: Any) -> None:
        self.sent.append(update.model_dump(by_alias=True, exclude_none=True))

    async def read_text_file(self, session_id: str, path: str) -> ReadTextFileResponse:
        self.reads.append(path)
        if path not in self.files:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.files[path])

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        self.writes.append((path, content))
        self.files[path] = content


def frontend(client: RecordingClient, root: Path, fs: bool = True) -> AcpFrontend:
    front = AcpFrontend(client)
    caps = FileSystemCapabilities(read_text_file=fs, write_text_file=fs)
    front.set_capabilities(ClientCapabilities(fs=caps))
    front.roots["s1"] = root.resolve()
    return front


def test_kiln_only_events_become_visible_text() -> None:
    root = Path("/w")
    error = render_event(ErrorReported(message="boom", hint="retry later"), root=root)
    assert error == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "\n\nError: boom (retry later)\n"},
    }
    status = render_event(StatusNote(text="step limit reached"), root=root)
    assert status is not None and status["sessionUpdate"] == "agent_thought_chunk"
    assert status["_meta"]["kiln"]["text"] == "step limit reached"
    refusal = render_event(Refused(id="t", tool="run_command"), root=root)
    assert refusal is not None and "Not allowed: run_command: denied" in refusal["content"]["text"]
    plan = render_event(PlanUpdated(entries=[]), root=root)
    assert plan == {"sessionUpdate": "plan", "entries": []}
    assert render_event(TurnDone(stop_reason="end_turn"), root=root) is None


async def test_a_malformed_update_is_dropped_not_raised(tmp_path: Path) -> None:
    client = RecordingClient()
    front = frontend(client, tmp_path)
    await front.send_update("s1", {"sessionUpdate": "tool_call", "title": 5})
    await front.send_update(
        "s1", {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}
    )
    await front.flush("s1")
    assert [u["content"]["text"] for u in client.sent] == ["ok"]


async def test_only_workspace_files_are_fetched_and_released_when_the_call_ends(
    tmp_path: Path,
) -> None:
    inside = tmp_path / "a.txt"
    inside.write_text("disk")
    outside = tmp_path.parent / "secret.txt"
    client = RecordingClient({str(inside): "buffer", str(outside): "secret"})
    front = frontend(client, tmp_path)
    start = {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "title": "read_file",
        "locations": [{"path": str(inside)}, {"path": str(outside)}],
    }
    await front.send_update("s1", start)
    assert client.reads == [str(inside)]
    assert front.read_buffer(inside) == "buffer" and front.read_buffer(outside) is None
    await front.send_update(
        "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}
    )
    assert front.read_buffer(inside) is None
    # A cancelled call never sends its final update: the end of the turn drops its snapshot.
    await front.send_update("s1", {**start, "toolCallId": "c2"})
    assert front.read_buffer(inside) == "buffer"
    front.release("s1")
    assert front.read_buffer(inside) is None


async def test_without_fs_capability_edits_use_the_disk_with_a_stale_check(
    tmp_path: Path,
) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old\n")
    client = RecordingClient()
    front = frontend(client, tmp_path, fs=False)
    proposal = EditProposal("f.txt", "old\n", "new\n", meta={"abspath": str(target)})
    assert await front.apply_edit("s1", proposal) == "applied"
    assert target.read_text() == "new\n" and client.writes == []
    assert await front.apply_edit("s1", proposal) == "stale"  # computed against "old\n"


async def test_client_write_failure_is_a_tool_error(tmp_path: Path) -> None:
    class FailingClient(RecordingClient):
        async def write_text_file(self, session_id: str, path: str, content: str) -> None:
            raise RequestError.internal_error({"details": "read-only buffer"})

    target = tmp_path / "f.txt"
    client = FailingClient({str(target): "old\n"})
    front = frontend(client, tmp_path)
    proposal = EditProposal("f.txt", "old\n", "new\n", meta={"abspath": str(target)})
    with pytest.raises(ToolError) as failed:
        await front.apply_edit("s1", proposal)
    assert "could not write f.txt" in str(failed.value)


async def test_an_edit_of_a_file_with_windows_line_ends_is_not_stale(tmp_path: Path) -> None:
    """The disk text is compared as it is: \\r\\n kept (read_text would make it \\n)."""
    target = tmp_path / "win.py"
    target.write_bytes(b"a = 1\r\nb = 2\r\n")
    client = RecordingClient()  # the client cannot read it: the disk is compared
    front = frontend(client, tmp_path, fs=True)
    proposal = EditProposal(
        "win.py", "a = 1\r\nb = 2\r\n", "a = 10\r\nb = 2\r\n", meta={"abspath": str(target)}
    )
    assert await front.apply_edit("s1", proposal) == "applied"
    assert client.writes == [(str(target.resolve()), "a = 10\r\nb = 2\r\n")]
    disk_only = frontend(RecordingClient(), tmp_path, fs=False)
    target.write_bytes(b"a = 1\r\nb = 2\r\n")
    assert await disk_only.apply_edit("s1", proposal) == "applied"
    assert target.read_bytes() == b"a = 10\r\nb = 2\r\n"


async def test_a_write_the_client_leaves_unanswered_is_not_known_to_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write unanswered at the timeout read "could not write f.txt: " (the timeout has no
    text): the model took it for a failed write the client might still carry out. It now reads
    that the write is not known to be written, and to read the file again."""

    class SilentClient(RecordingClient):
        async def write_text_file(self, session_id: str, path: str, content: str) -> None:
            await asyncio.Event().wait()

    monkeypatch.setattr(frontend_module, "FS_TIMEOUT", 0.05)
    target = tmp_path / "f.txt"
    front = frontend(SilentClient({str(target): "old\n"}), tmp_path)
    proposal = EditProposal("f.txt", "old\n", "new\n", meta={"abspath": str(target)})
    with pytest.raises(ToolError) as failed:
        await front.apply_edit("s1", proposal)
    assert "did not answer the write of f.txt within 0.05 s" in str(failed.value)
    assert "not known to be written" in str(failed.value)
    assert "read the file again" in (failed.value.suggestion or "")
