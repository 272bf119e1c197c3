"""MCP servers as a source of deferred tools, through the official ``mcp`` SDK.

Servers are configured in ``.kiln/mcp.json`` (project) and ``$KILN_HOME/mcp.json`` (user), the
project winning a name clash, in the shape other clients use:
``{"mcpServers": {NAME: {"command", "args", "env", "cwd"} | {"url", "headers"}}}``.
Each ``McpSource`` owns one connection in a background task: the SDK's transports are anyio
task groups that must be exited by the task that entered them, and the agent calls ``start``,
tools and ``close`` from different tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skills_registry import launcher
from skills_registry.deferred import DeferredTool, qualify
from skills_registry.errors import McpConfigError, ToolCallError

CONFIG_FILE = "mcp.json"
DEFAULT_START_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 120.0
MAX_TOOLS_PER_SERVER = 500


@dataclass
class McpServerConfig:
    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    origin: str = ""  # the mcp.json it came from

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise McpConfigError(f"{where} must be an object of string values")
    return dict(value)


def _parse_server(name: str, raw: Any, origin: Path) -> McpServerConfig:
    where = f"{origin}: server '{name}'"
    if not isinstance(raw, dict):
        raise McpConfigError(f"{where} must be an object")
    command, url = raw.get("command"), raw.get("url")
    if (command is None) == (url is None):
        raise McpConfigError(f"{where} needs exactly one of 'command' (stdio) or 'url' (HTTP)")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise McpConfigError(f"{where}: 'command' must be a non-empty string")
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("http://", "https://"))
    ):
        raise McpConfigError(f"{where}: 'url' must be an http(s) URL")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError(f"{where}: 'args' must be a list of strings")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise McpConfigError(f"{where}: 'cwd' must be a string")
    return McpServerConfig(
        name=name,
        command=command,
        args=list(args),
        env=_str_map(raw.get("env"), f"{where}: 'env'"),
        cwd=cwd,
        url=url,
        headers=_str_map(raw.get("headers"), f"{where}: 'headers'"),
        origin=str(origin),
    )


def _read_config(path: Path) -> dict[str, McpServerConfig]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise McpConfigError(f"{path}: not valid JSON ({exc})") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f"{path}: missing the 'mcpServers' object")
    return {name: _parse_server(name, raw, path) for name, raw in servers.items()}


def load_mcp_config(root: Path, kiln_home: Path | None = None) -> dict[str, McpServerConfig]:
    """Merged server configs, project over user; raises ``McpConfigError`` naming the file."""
    if kiln_home is None:
        env = os.environ.get("KILN_HOME")
        kiln_home = Path(env).expanduser() if env else Path.home() / ".kiln"
    merged = _read_config(kiln_home / CONFIG_FILE)
    merged.update(_read_config(Path(root) / ".kiln" / CONFIG_FILE))
    return dict(sorted(merged.items()))


def _field(obj: Any, snake: str, camel: str, default: Any = None) -> Any:
    """SDK 2.x models use snake_case attributes, 1.x camelCase; accept both."""
    value = getattr(obj, snake, None)
    return value if value is not None else getattr(obj, camel, default)


def _result_text(result: Any) -> str:
    parts = []
    for block in _field(result, "content", "content", []) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(
                f"[{kind}: {getattr(block, 'mime_type', None) or getattr(block, 'mimeType', '')}]"
            )
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            parts.append(
                getattr(resource, "text", None) or f"[resource: {getattr(resource, 'uri', '')}]"
            )
        else:
            parts.append(f"[{kind or 'content'}]")
    structured = _field(result, "structured_content", "structuredContent")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    return "\n".join(parts)


class McpSource:
    """One MCP server: ``await start()``, ``await list_tools()``, calls, ``await close()``."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.config = config
        self.name = config.name
        self.instructions = ""
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()

    def _transport(self) -> Any:
        if self.config.url:
            from mcp.client import streamable_http

            if hasattr(streamable_http, "streamable_http_client"):  # mcp 2.x
                if self.config.headers:
                    from mcp.shared._httpx_utils import create_mcp_http_client

                    return _owned_client_transport(
                        streamable_http.streamable_http_client,
                        self.config.url,
                        create_mcp_http_client(headers=self.config.headers),
                    )
                return streamable_http.streamable_http_client(self.config.url)
            return streamable_http.streamablehttp_client(  # type: ignore[attr-defined]
                self.config.url, headers=self.config.headers or None
            )
        from mcp.client.stdio import StdioServerParameters, stdio_client

        argv, env = launcher.prepare(
            [self.config.command or "", *self.config.args],
            Path(self.config.cwd) if self.config.cwd else None,
            _default_env(),
        )
        # Variables the configuration names are meant for the server; inherited ones were scrubbed.
        params = StdioServerParameters(
            command=argv[0],
            args=argv[1:],
            env={**(env or {}), **self.config.env} or None,
            cwd=self.config.cwd,
        )
        return stdio_client(params, errlog=_stderr_sink())

    async def _run(self) -> None:
        from mcp import ClientSession

        assert self._ready is not None
        try:
            async with (
                self._transport() as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                init = await session.initialize()
                self.instructions = getattr(init, "instructions", None) or ""
                self._session = session
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to start(), never left unread
            if not self._ready.done():
                if isinstance(exc, asyncio.CancelledError):
                    self._ready.cancel()  # a cancelled future warns nobody when left unread
                else:
                    self._ready.set_exception(exc)
        finally:
            self._session = None

    async def start(self) -> None:
        """Launch or connect and initialise; raise ``ToolCallError`` with the reason on failure."""
        if self._session is not None:
            return
        self._stop = asyncio.Event()
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.start_timeout)
        except TimeoutError:
            await self.close()
            raise ToolCallError(
                f"MCP server '{self.name}' did not initialise within {self.start_timeout:g}s",
                hint=f"check the command in {self.config.origin or CONFIG_FILE}",
            ) from None
        except Exception as exc:  # noqa: BLE001 - any transport failure becomes one line
            await self.close()
            raise ToolCallError(
                f"MCP server '{self.name}' failed to start: {_reason(exc)}",
                hint=f"check the server entry in {self.config.origin or CONFIG_FILE}",
            ) from None

    async def list_tools(self) -> list[DeferredTool]:
        """Every tool the server offers (all pages, capped), as deferred tools."""
        session = self._require()
        tools: list[Any] = []
        cursor: str | None = None
        while len(tools) < MAX_TOOLS_PER_SERVER:
            result = await self._list_page(session, cursor)
            tools.extend(result.tools)
            cursor = _field(result, "next_cursor", "nextCursor")
            if not cursor:
                break
        return [self._deferred(tool) for tool in tools[:MAX_TOOLS_PER_SERVER]]

    @staticmethod
    async def _list_page(session: Any, cursor: str | None) -> Any:
        if cursor is None:
            return await session.list_tools()
        try:
            from mcp.types import PaginatedRequestParams

            return await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        except (ImportError, TypeError):
            return await session.list_tools(cursor=cursor)

    def _deferred(self, tool: Any) -> DeferredTool:
        schema = _field(tool, "input_schema", "inputSchema", None) or {
            "type": "object",
            "properties": {},
        }
        tool_name = tool.name

        async def caller(args: dict[str, Any]) -> str:
            return await self.call(tool_name, args)

        return DeferredTool(
            name=qualify(self.name, tool_name),
            namespace=self.name,
            description=(tool.description or getattr(tool, "title", None) or tool_name).strip(),
            input_schema=dict(schema),
            source=f"mcp:{self.name}",
            tool_name=tool_name,
            _caller=caller,
        )

    async def call(self, tool: str, args: dict[str, Any]) -> str:
        session = self._require()
        label = f"{self.name}__{tool}"
        try:
            result = await asyncio.wait_for(session.call_tool(tool, args), self.call_timeout)
        except TimeoutError:
            raise ToolCallError(f"{label}: no answer within {self.call_timeout:g}s") from None
        except Exception as exc:  # noqa: BLE001 - protocol errors are reported, not raised raw
            raise ToolCallError(f"{label}: {_reason(exc)}") from None
        text = _result_text(result)
        if _field(result, "is_error", "isError", False):
            raise ToolCallError(
                f"{label} failed: {text or 'no details'}", hint="check the arguments"
            )
        return text

    def _require(self) -> Any:
        if self._session is None:
            raise ToolCallError(f"MCP server '{self.name}' is not running", hint="start it first")
        return self._session

    async def close(self) -> None:
        """Stop the connection (and the server process for stdio); safe to call twice."""
        task, self._task = self._task, None
        if task is None:
            return
        if self._session is None and not task.done():
            task.cancel()  # still connecting: nothing to shut down politely
        else:
            self._stop.set()
        done, _ = await asyncio.wait({task}, timeout=10)
        if not done:
            task.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await task
        self._session = None


@contextlib.asynccontextmanager
async def _owned_client_transport(factory: Any, url: str, client: Any) -> Any:
    """The SDK leaves a caller-provided HTTP client open; this one is ours to close."""
    async with client, factory(url, http_client=client) as streams:
        yield streams


def _reason(exc: BaseException) -> str:
    """The innermost useful message (anyio wraps failures in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text


def _stderr_sink() -> Any:
    """Server stderr goes to our stderr, never stdout (stdout is JSON-RPC under ``kiln lsp``)."""
    import sys

    return sys.stderr


def _default_env() -> dict[str, str]:
    """The environment the MCP SDK gives a stdio server by default (it passes few variables)."""
    from mcp.client.stdio import get_default_environment

    return dict(get_default_environment())
