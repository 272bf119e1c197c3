"""A bytes-level JSON-RPC client for `kiln lsp`: what a client library would hide (omitted
params, bad JSON, requests out of lifecycle order) is sent exactly as written."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

OMIT = object()


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def error_code(reply: dict[str, Any]) -> int:
    """The JSON-RPC error code of ``reply``, which must be an error."""
    assert "error" in reply, reply
    return int(reply["error"]["code"])


class RawServer:
    def __init__(self, proc: asyncio.subprocess.Process, *, read: bool = True) -> None:
        self.proc = proc
        self.messages: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        self.stderr = bytearray()
        self.logged = asyncio.Event()  # set when stderr grows
        self._status_ids = itertools.count()
        self._tasks = [asyncio.ensure_future(self._drain())]
        self.reading = False
        if read:
            self.start_reading()

    @classmethod
    async def start(cls, root: Path, env: dict[str, str], *, read: bool = True) -> RawServer:
        """``read=False``: the server's answers stay unread until ``start_reading``."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "lsp_server", "lsp",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=str(root), env=env,
        )  # fmt: skip
        return cls(proc, read=read)

    def start_reading(self) -> None:
        if not self.reading:
            self._tasks.append(asyncio.ensure_future(self._read()))
            self.reading = True

    async def stderr_says(self, text: bytes, timeout: float = 60) -> None:
        """Wait until the server's stderr holds ``text``."""

        async def wait() -> None:
            while text not in self.stderr:
                self.logged.clear()
                await self.logged.wait()

        await asyncio.wait_for(wait(), timeout)

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = await out.readline()
                if not line:
                    self.arrived.set()
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None, "a frame without Content-Length"
            self.messages.append(json.loads(await out.readexactly(length)))
            self.arrived.set()

    async def _drain(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr.extend(chunk)
            self.logged.set()
        self.logged.set()

    def send_bytes(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(body))

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps(message).encode())

    def notify(self, method: str, params: Any = OMIT) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not OMIT:
            message["params"] = params
        self.send(message)

    def request_nowait(self, msg_id: Any, method: str, params: Any = OMIT) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not OMIT:
            message["params"] = params
        self.send(message)

    async def request(self, msg_id: Any, method: str, params: Any = OMIT) -> dict[str, Any]:
        """Send a request; return its whole response message (``result`` or ``error``)."""
        self.request_nowait(msg_id, method, params)
        return await self.response(msg_id)

    async def wait_for(self, predicate: Any, timeout: float = 60) -> dict[str, Any]:
        async def wait() -> dict[str, Any]:
            while True:
                for message in self.messages:
                    if predicate(message):
                        return message
                if self.proc.stdout is not None and self.proc.stdout.at_eof():
                    raise AssertionError(f"the server closed stdout; got {self.messages}")
                self.arrived.clear()
                await self.arrived.wait()

        return await asyncio.wait_for(wait(), timeout)

    async def response(self, msg_id: Any, timeout: float = 60) -> dict[str, Any]:
        return await self.wait_for(lambda m: "method" not in m and m.get("id") == msg_id, timeout)

    async def index_until(self, ok: Any, timeout: float = 120) -> dict[str, Any]:
        """Poll `kiln/index/status` until ``ok(status)`` (the server's own account of its work)
        and return that status; AssertionError with the last one when it never holds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            reply = await self.request(
                f"index-status-{next(self._status_ids)}", "kiln/index/status", {}
            )
            status = reply["result"]
            if ok(status):
                return status
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"the index never got there: {status}")
            await asyncio.sleep(0.05)

    async def initialize(self, root: Path, **params: Any) -> dict[str, Any]:
        base = {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}}
        reply = await self.request("init", "initialize", {**base, **params})
        assert "result" in reply, reply
        self.notify("initialized", {})
        return reply["result"]

    async def exit_code(self, timeout: float = 60) -> int:
        code = await asyncio.wait_for(self.proc.wait(), timeout)
        await asyncio.gather(*self._tasks)
        return code

    async def shutdown_and_exit(self) -> int:
        """`shutdown` (answered with null), then `exit`; the process's exit code."""
        assert (await self.request("bye", "shutdown"))["result"] is None
        self.notify("exit")
        return await self.exit_code()

    async def close(self) -> None:
        self.start_reading()  # a paused pipe never sees its end: the process is never reaped
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
