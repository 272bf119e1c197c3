"""MCP servers as a source of deferred tools, through the official ``mcp`` SDK.

An ``McpSource`` connects to one configured server (``skills_registry.mcp_config``); which
servers may be started at all is decided before, by ``skills_registry.mcp_trust`` (a
repository's servers only once the user approved them). Each ``McpSource`` owns one connection
in a background task: the SDK's transports are anyio task groups that must be exited by the
task that entered them, and the agent calls ``start``, tools and ``close`` from different tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

from kiln_errors.setting import number_in
from skills_registry import launcher
from skills_registry.deferred import DeferredTool, qualify
from skills_registry.errors import McpSettingError, ToolCallError
from skills_registry.mcp_config import CONFIG_FILE, McpServerConfig, printable
from skills_registry.mcp_process import StderrHead, default_env, ends_with_us, stderr_sink
from skills_registry.mcp_sdk import (
    connection_closed,
    failure_reason,
    import_sdk,
    result_text,
    schema_problem,
    sdk_field,
)

__all__ = ["McpServerConfig", "McpSource"]

DEFAULT_START_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 120.0
MAX_START_TIMEOUT = 600.0  # as an ACP client's mcpStartTimeout (lsp_server.core.config)
MAX_CALL_TIMEOUT = 86_400.0  # a day: 1e300 was no bound at all
MAX_TOOLS_PER_SERVER = 500
MAX_RESTARTS = 2  # starts again of a server that exited during a call, per session
START_TIMEOUT_ENV = "KILN_MCP_START_TIMEOUT"  # start, handshake and tools/list, each
CALL_TIMEOUT_ENV = "KILN_MCP_CALL_TIMEOUT"  # one tools/call


def env_timeouts() -> tuple[float, float]:
    """(start, call) seconds from ``KILN_MCP_START_TIMEOUT`` (above 0, at most 600, as an ACP
    client's ``mcpStartTimeout``) and ``KILN_MCP_CALL_TIMEOUT`` (above 0, at most a day); unset
    keeps the default. Any other value (``abc``, ``1e300``, ``inf``, ``nan``, ``-0``, ``١٢``) is
    refused with one line (exit 2): a warning and the default hid the typo, and ``1e300`` was
    no bound at all."""
    out = []
    for name, default, most in (
        (START_TIMEOUT_ENV, DEFAULT_START_TIMEOUT, MAX_START_TIMEOUT),
        (CALL_TIMEOUT_ENV, DEFAULT_CALL_TIMEOUT, MAX_CALL_TIMEOUT),
    ):
        raw = os.environ.get(name, "").strip()
        if not raw:
            out.append(default)
            continue
        value = number_in(raw, 0, most, above_low=True)
        if value is None:
            raise McpSettingError(
                f"{name}={printable(raw, 40)} is not a number of seconds above 0, "
                f"at most {most:,g}",
                hint=f"unset it for the default of {default:g}",
            )
        out.append(value)
    return out[0], out[1]


class McpSource:
    """One MCP server: ``await start()``, ``await list_tools()``, calls, ``await close()``."""

    def __init__(
        self,
        config: McpServerConfig,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.config = config
        self.name = config.name
        self.instructions = ""
        self.warnings: list[str] = []  # tools left out of list_tools, one line each
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._errlog: Any = None  # our copy of the server's stderr pipe, closed once it runs
        self._launched: tuple[list[str], StderrHead] | None = None  # stdio: argv, stderr's head
        self._crashed = False  # the connection closed during a call
        self._restarts = 0
        self.tools_changed = False  # the server sent notifications/tools/list_changed
        self.listed: set[str] | None = None  # the tool names of its latest tools/list

    def _transport(self) -> Any:
        if self.config.url and self.config.sse:
            from mcp.client.sse import sse_client

            return sse_client(self.config.url, headers=self.config.headers or None)
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
            default_env(),
        )
        head = StderrHead()
        self._launched = (argv, head)
        argv = ends_with_us(argv, (env or os.environ).get("PATH"))
        # Variables the configuration names are meant for the server; inherited ones were scrubbed.
        params = StdioServerParameters(
            command=argv[0],
            args=argv[1:],
            env={**(env or {}), **self.config.env} or None,
            cwd=self.config.cwd,
        )
        self._errlog = stderr_sink(printable(self.name, 80), head)
        return stdio_client(params, errlog=self._errlog)

    async def _run(self) -> None:
        from mcp import ClientSession

        assert self._ready is not None
        try:
            async with (
                self._transport() as streams,
                ClientSession(streams[0], streams[1], message_handler=self._on_message) as session,
            ):
                self._close_errlog()  # the server has its copy: the relay ends when it exits
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
            self._close_errlog()

    async def _on_message(self, message: Any) -> None:
        """A server notification (SDK 1.x wraps it in ``root``): its tools changed, list them
        again at the next search."""
        notification = getattr(message, "root", message)
        if getattr(notification, "method", None) == "notifications/tools/list_changed":
            self.tools_changed = True

    def _close_errlog(self) -> None:
        errlog, self._errlog = self._errlog, None
        if errlog is not None:
            errlog.close()

    async def start(self) -> None:
        """Launch or connect and initialise; raise ``ToolCallError`` with the reason on failure."""
        if self._session is not None:
            return
        await import_sdk()
        for again in (True, False):
            self._stop = asyncio.Event()
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._run(), name=f"mcp:{self.name}")
            try:
                await asyncio.wait_for(asyncio.shield(self._ready), self.start_timeout)
                return
            except TimeoutError:
                await self.close()
                raise ToolCallError(
                    f"MCP server '{self.name}' did not initialise within {self.start_timeout:g}s",
                    hint=f"check the command in {self.config.origin or CONFIG_FILE}",
                ) from None
            except Exception as exc:  # noqa: BLE001 - any transport failure becomes one line
                await self.close()
                if again and await self._not_started():
                    continue  # a path the sandbox covers went away as it started
                raise ToolCallError(
                    f"MCP server '{self.name}' failed to start: {failure_reason(exc)}",
                    hint=f"check the server entry in {self.config.origin or CONFIG_FILE}",
                ) from None

    async def _not_started(self) -> bool:
        """Whether the stdio server just launched never started because the host's launcher lost
        a path it mounts meanwhile (``launcher.went_away``, read from all it wrote to stderr)."""
        launched, self._launched = self._launched, None
        if launched is None:
            return False
        argv, head = launched
        if not await asyncio.to_thread(head.ended.wait, 2):
            return False
        return launcher.went_away(argv, None, bytes(head.data))

    async def list_tools(self) -> list[DeferredTool]:
        """Every tool the server offers (all pages, capped), as deferred tools, within the start
        timeout. A tool whose input schema is no valid JSON Schema, or whose name an earlier tool
        took, is left out and named in ``warnings``: offered, it failed every call (and a provider
        refuses a request declaring it)."""
        session = self._require()
        try:
            tools = await asyncio.wait_for(self._all_tools(session), self.start_timeout)
        except TimeoutError:
            raise ToolCallError(
                f"MCP server '{self.name}' did not list its tools within {self.start_timeout:g}s",
                hint=f"check the server entry in {self.config.origin or CONFIG_FILE}",
            ) from None
        except Exception as exc:  # noqa: BLE001 - a malformed answer is one line, not a dump
            raise ToolCallError(
                f"MCP server '{self.name}' answered tools/list with an error: {failure_reason(exc)}",
                hint=f"check the server entry in {self.config.origin or CONFIG_FILE}",
            ) from None
        out: dict[str, DeferredTool] = {}
        for tool in tools[:MAX_TOOLS_PER_SERVER]:
            deferred = self._deferred(tool)
            problem = schema_problem(deferred.input_schema)
            if deferred.name in out:
                problem = "a tool of that name came first"
            if problem:
                shown = printable(str(tool.name), 80)
                self.warnings.append(f"MCP server '{self.name}': tool {shown} left out: {problem}")
                continue
            out[deferred.name] = deferred
        self.listed = {t.tool_name for t in out.values()}
        return list(out.values())

    async def _all_tools(self, session: Any) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        while len(tools) < MAX_TOOLS_PER_SERVER:
            result = await self._list_page(session, cursor)
            tools.extend(result.tools)
            cursor = sdk_field(result, "next_cursor", "nextCursor")
            if not cursor:
                break
        return tools

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
        schema = sdk_field(tool, "input_schema", "inputSchema", None) or {
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
        if self._crashed and self._session is None and self._restarts < MAX_RESTARTS:
            self._restarts += 1  # it exited during an earlier call: start it again
            self._crashed = False
            await self.start()
        session = self._require()
        label = f"{self.name}__{tool}"
        if self.listed is not None and tool not in self.listed:
            raise ToolCallError(
                f"{label}: MCP server '{self.name}' no longer offers this tool (its tools changed)",
                hint="use tool_search to find what it offers now",
            )
        try:
            result = await asyncio.wait_for(session.call_tool(tool, args), self.call_timeout)
        except TimeoutError:
            raise ToolCallError(f"{label}: no answer within {self.call_timeout:g}s") from None
        except Exception as exc:  # noqa: BLE001 - protocol errors are reported, not raised raw
            if not connection_closed(exc):
                raise ToolCallError(f"{label}: {failure_reason(exc)}") from None
            await self.close()
            self._crashed = True
            again = self._restarts < MAX_RESTARTS
            raise ToolCallError(
                f"{label}: MCP server '{self.name}' exited during the call"
                + (" (it is started again at the next call)" if again else ""),
                hint="check the server's own log" if again else "its tools are unavailable now",
            ) from None
        text = result_text(result)
        if sdk_field(result, "is_error", "isError", False):
            raise ToolCallError(
                f"{label} failed: {text or 'no details'}", hint="check the arguments"
            )
        return text

    def _require(self) -> Any:
        if self._session is None:
            gone = f" (it exited {self._restarts + 1} times)" if self._crashed else ""
            raise ToolCallError(
                f"MCP server '{self.name}' is not running{gone}",
                hint="its tools are unavailable in this session",
            )
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
