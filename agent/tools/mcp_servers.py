"""The MCP servers of one session: which may start (``skills_registry.mcp_trust``), starting them
through the session's launcher (its sandbox), and the lines the host is told about them.

The servers of ``mcp.json`` start on the first ``tool_search``, so a session that never needs
them never pays. Servers the host passed for the session (an ACP client's ``mcpServers``) start
when the host asks (``start_client``), each within a bound, so a broken one is reported at the
first turn instead of hanging the session's creation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from skills_registry import launcher
from skills_registry.deferred import DeferredTool, ToolCatalog
from skills_registry.errors import SkillsError
from skills_registry.mcp_config import McpServerConfig
from skills_registry.mcp_source import McpSource, env_timeouts
from skills_registry.mcp_trust import plan_servers

log = logging.getLogger("kiln.skills")


class McpServers:
    """``sources`` to start, ``notes`` for the host (each sent once), tools into ``catalog``."""

    def __init__(
        self,
        root: Path,
        catalog: ToolCatalog,
        *,
        kiln_home: Path | None = None,
        honour_trust_setting: bool = True,
        client: list[McpServerConfig] | None = None,
        enabled: bool = True,
    ) -> None:
        self.catalog = catalog
        self.sources: list[McpSource] = []
        self.notes: list[str] = []  # servers not started (pending approval, shadowed, failed)
        self.warnings: list[str] = []
        # The session's launcher (its sandbox), set by the session: every server starts through it.
        self.launch: Callable[[], launcher.Launcher | None] = lambda: None
        self._tried: set[int] = set()  # id() of the sources a start was attempted for
        self._failed: set[str] = set()  # client servers that did not start: not offered
        self._started = not enabled
        if not enabled:
            return
        timeouts = env_timeouts()
        try:
            plan = plan_servers(
                root, kiln_home, honour_trust_setting=honour_trust_setting, client=client
            )
        except SkillsError as exc:  # the client's servers are in no file: they still start
            self.warnings.append(f"{exc}: no MCP server from mcp.json started")
            self.notes.append(self.warnings[-1])
            self.sources = [McpSource(c, *timeouts) for c in client or []]
        else:
            self.sources = [McpSource(c, *timeouts) for c in plan.runnable()]
            self.notes.extend(plan.notes())

    def namespaces(self) -> dict[str, str]:
        return {
            s.name: f"MCP server ({s.config.transport})"
            for s in self.sources
            if s.name not in self._failed
        }

    async def start_client(self, timeout: float) -> None:
        """Start the servers the host passed for this session now, each within ``timeout``
        seconds; one that fails is left out of the session and named in a note."""
        client = [s for s in self.sources if s.config.scope == "client"]
        for source in client:
            source.start_timeout = timeout
        failed = await self._open(client)
        self._failed.update(s.name for s in failed)

    async def ensure(self) -> None:
        """Start every server once and add their tools; failures become notes. Later calls
        (each search, each request on Anthropic) list again the tools of servers that said
        they changed."""
        if self._started:
            await self._relist()
            return
        self._started = True
        await self._open(self.sources)

    async def _relist(self) -> None:
        """A server that sent ``notifications/tools/list_changed`` has its tools listed again
        and its namespace's tools replaced (new ones found by the next search; a removed one's
        call says it is gone). A listing that fails keeps the tools it had."""
        for source in self.sources:
            if not source.tools_changed or source.name in self._failed:
                continue
            source.tools_changed = False
            source.warnings.clear()
            try:
                tools = await source.list_tools()
            except SkillsError as exc:
                self.notes.append(str(exc))
                log.warning("%s", exc)
                continue
            self.catalog.remove_namespace(source.name)
            self._add(source, tools)

    async def _open(self, sources: list[McpSource]) -> list[McpSource]:
        """Start those not tried yet, through the session's launcher; returns those that failed."""
        failed: list[McpSource] = []

        async def open_one(source: McpSource) -> None:
            try:
                await source.start()
                self._add(source, await source.list_tools())
            except SkillsError as exc:
                failed.append(source)
                self.warnings.append(str(exc))
                self.notes.append(str(exc))
                log.warning("%s", exc)
                await source.close()

        fresh = [s for s in sources if id(s) not in self._tried]
        self._tried.update(id(s) for s in fresh)
        token = launcher.LAUNCHER.set(self.launch())
        try:
            # Concurrently: one slow server must not add its start-up time to every other one.
            await asyncio.gather(*(open_one(s) for s in fresh))
        finally:
            launcher.LAUNCHER.reset(token)
        return failed

    def _add(self, source: McpSource, tools: list[DeferredTool]) -> None:
        self.catalog.extend(tools)
        for warning in source.warnings:  # tools it offered that are left out
            if warning not in self.warnings:
                self.warnings.append(warning)
                self.notes.append(warning)
                log.warning("%s", warning)
        summary = source.instructions or f"MCP server {source.name}"
        self.catalog.describe_namespace(source.name, summary)

    async def aclose(self) -> None:
        for source in self.sources:
            await source.close()
