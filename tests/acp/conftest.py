"""An ACP client (the SDK's client side) that drives `kiln acp` as a real subprocess.

The client plays an editor: it serves ``fs/read_text_file`` from its own buffers (which may
differ from the disk, like unsaved edits), records ``fs/write_text_file`` into those buffers
without touching the disk, answers permission requests by a policy, and records every
``session/update``. The agent runs with the scripted model from a JSON file.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

KILN_ACP = [sys.executable, "-m", "lsp_server", "acp"]


@dataclass
class EditorClient:
    """An ``acp.Client``: buffers by absolute path, a permission policy, a log of everything."""

    buffers: dict[str, str] = field(default_factory=dict)
    answer: str = "allow_once"  # an optionId, "cancelled", or "never" (do not answer)
    updates: list[dict[str, Any]] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)  # set at each permission request
    diffs_when_asked: list[list[str]] = field(default_factory=list)  # diff paths seen by then
    # path -> text the buffer holds after its first read (the user typing meanwhile)
    typed_after_read: dict[str, str] = field(default_factory=dict)
    waiters: list[tuple[Callable[[dict[str, Any]], bool], asyncio.Future[None]]] = field(
        default_factory=list
    )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        data["_session"] = session_id
        self.updates.append(data)
        for predicate, future in list(self.waiters):
            if not future.done() and predicate(data):
                future.set_result(None)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append(
            {
                "tool_call": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
                "options": [o.model_dump(mode="json", by_alias=True) for o in options],
            }
        )
        self.diffs_when_asked.append(
            [
                c["path"]
                for u in self.updates
                if u["sessionUpdate"] == "tool_call_update"
                for c in u.get("content") or []
                if c.get("type") == "diff"
            ]
        )
        self.asked.set()
        if self.answer == "never":
            await asyncio.Event().wait()
        if self.answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kw: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            content = self.buffers[path]
            if path in self.typed_after_read:
                self.buffers[path] = self.typed_after_read.pop(path)
            return ReadTextFileResponse(content=content)
        try:
            return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RequestError.resource_not_found(path) from None

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> None:
        if any(predicate(u) for u in self.updates):
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append((predicate, future))
        await asyncio.wait_for(future, timeout)

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u["content"].get("text", "") for u in self.updates if u["sessionUpdate"] == kind
        )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("disk text of the notes\n", encoding="utf-8")
    (root / "app.py").write_text("def greet():\n    return 'hello'\n", encoding="utf-8")
    return root.resolve()


@dataclass
class Agent:
    conn: Any
    process: Any
    client: EditorClient
    stderr: Path

    async def start(self, fs: bool = True) -> Any:
        caps = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=False
        )
        return await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=caps,
            client_info=Implementation(name="kiln-tests", version="0"),
        )


@pytest.fixture
def spawn(tmp_path: Path, kiln_home: Path) -> Callable[..., Any]:
    """``async with spawn(script, client) as agent`` runs `kiln acp` with a scripted model."""
    counter = iter(range(1000))

    @asynccontextmanager
    async def _spawn(script: list[Any], client: EditorClient, **env: str) -> AsyncIterator[Agent]:
        n = next(counter)
        script_file = tmp_path / f"script-{n}.json"
        script_file.write_text(json.dumps(script), encoding="utf-8")
        stderr_path = tmp_path / f"stderr-{n}.log"
        environment = {
            "KILN_HOME": str(kiln_home),
            "KILN_PROVIDER": "scripted",
            "KILN_SCRIPT": str(script_file),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            **env,
        }
        with stderr_path.open("wb") as err:
            async with spawn_agent_process(
                client, *KILN_ACP, env=environment, transport_kwargs={"stderr": err.fileno()}
            ) as (conn, process):
                yield Agent(conn, process, client, stderr_path)
        logged = stderr_path.read_text(errors="replace")
        assert "Traceback" not in logged, logged  # user-facing problems are one-line logs

    return _spawn


@pytest.fixture
def conformance(tmp_path: Path, kiln_home: Path, workspace: Path) -> Any:
    """A scenario runner of the official ACP TypeScript SDK client (``tests/acp/sdk_runner``)."""
    from tests.acp.sdk_runner import Conformance, node_for_sdk_client

    return Conformance(node_for_sdk_client(), tmp_path, kiln_home, workspace)
