"""The ``mcpServers`` of ``session/new`` and ``session/load``, checked as the client sent them.

ACP: every agent supports stdio servers (``{name, command, args, env: [{name, value}]}``,
``command`` an absolute path); HTTP (``{type: "http", name, url, headers: [{name, value}]}``)
and SSE are optional and advertised in ``agentCapabilities.mcpCapabilities``. Kiln's MCP client
speaks stdio and streamable HTTP, not SSE. The SDK drops list items it cannot parse without a
word, so the stdio guard hands the raw list over (``params.RAW_MCP_KEY``) and it is checked here:
the first problem is one ``-32602`` line, and nothing is started or stored.

The servers are the user's own editor's: they start like the user's ``$KILN_HOME/mcp.json``
entries (no approval), for that session only, and replace a configured server of the same name.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from lsp_server.core import InvalidParams
from skills_registry.deferred import api_safe
from skills_registry.mcp_config import McpServerConfig, shown_name

MCP_HTTP = MCP_SSE = True  # advertised in mcpCapabilities
ORIGIN = "the client's mcpServers"
MAX_SERVERS = 100


def parse_mcp_servers(raw: Any, cwd: str) -> list[McpServerConfig]:
    """The servers to start for a session in ``cwd``; ``InvalidParams`` for the first problem."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidParams("mcpServers must be a list of MCP server entries")
    if len(raw) > MAX_SERVERS:
        raise InvalidParams(f"mcpServers lists {len(raw)} servers; at most {MAX_SERVERS}")
    servers: list[McpServerConfig] = []
    seen: dict[str, str] = {}  # tool namespace -> name
    for index, entry in enumerate(raw):
        server = _parse_entry(entry, index, cwd)
        clash = seen.get(api_safe(server.name))
        if clash is not None:
            same = "appears twice" if clash == server.name else f"clashes with {shown_name(clash)}"
            raise InvalidParams(
                f"mcpServers: the name {shown_name(server.name)} {same}",
                hint="each server needs its own name: its tools are called NAME__tool",
            )
        seen[api_safe(server.name)] = server.name
        servers.append(server)
    return servers


def _parse_entry(entry: Any, index: int, cwd: str) -> McpServerConfig:
    where = f"mcpServers[{index}]"
    if not isinstance(entry, dict):
        raise InvalidParams(f"{where} must be an object")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidParams(f"{where}: 'name' must be a non-empty string")
    where = f"{where} ({shown_name(name)})"
    kind = entry.get("type", "stdio")
    if kind in ("http", "sse"):
        url = _string(entry, "url", where)
        if not url.startswith(("http://", "https://")):
            raise InvalidParams(f"{where}: 'url' must be an http(s) URL")
        headers = _pairs(entry, "headers", where)
        return McpServerConfig(
            name=name,
            url=url,
            headers=headers,
            origin=ORIGIN,
            scope="client",
            raw=entry,
            sse=kind == "sse",
        )
    if kind == "acp":
        raise InvalidParams(
            f"{where}: the acp transport is not supported (mcpCapabilities.acp is false)",
            hint="pass the server as stdio (command), http or sse (url)",
        )
    if kind != "stdio":
        raise InvalidParams(f"{where}: unknown type {kind!r}", hint="use stdio, http or sse")
    command = _string(entry, "command", where)
    if not Path(command).is_absolute():
        found = shutil.which(command)
        raise InvalidParams(
            f"{where}: 'command' must be an absolute path, got {command!r}",
            hint=f"ACP asks for the executable's absolute path{f', here {found}' if found else ''}",
        )
    args = entry.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) and "\0" not in a for a in args):
        raise InvalidParams(f"{where}: 'args' must be a list of strings")
    return McpServerConfig(
        name=name,
        command=command,
        args=list(args),
        env=_pairs(entry, "env", where),
        cwd=cwd,
        origin=ORIGIN,
        scope="client",
        raw=entry,
    )


def _string(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise InvalidParams(f"{where}: '{key}' must be a non-empty string")
    return value


def _pairs(entry: dict[str, Any], key: str, where: str) -> dict[str, str]:
    """ACP's ``[{name, value}]`` lists (``env``, ``headers``) as a mapping."""
    value = entry.get(key)
    problem = f"{where}: '{key}' must be a list of {{name, value}} string pairs"
    if not isinstance(value, list):
        raise InvalidParams(problem)
    out: dict[str, str] = {}
    for pair in value:
        if not isinstance(pair, dict):
            raise InvalidParams(problem)
        name, text = pair.get("name"), pair.get("value")
        if not isinstance(name, str) or not isinstance(text, str) or not name:
            raise InvalidParams(problem)
        if "\0" in name + text or (key == "env" and "=" in name):
            raise InvalidParams(f"{where}: '{key}' has an invalid name {name!r}")
        out[name] = text
    return out
