"""MCP server entries as configured: ``$KILN_HOME/mcp.json`` (the user's) and ``.kiln/mcp.json``
(the repository's), in the shape other clients use:
``{"mcpServers": {NAME: {"command", "args", "env", "cwd"} | {"url", "headers"}}}``, with an
optional ``"disabled": true`` (kept, never started) and an optional ``"type"``: ``"stdio"``, ``"http"`` (streamable HTTP, the default for a ``url``) or
``"sse"`` (the older HTTP+SSE transport).

This module only parses. Which entries may start (a repository's needs the user's approval, and
never replaces a user's server of the same name) is ``skills_registry.mcp_trust``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kiln_errors.home import kiln_home
from skills_registry import config_file
from skills_registry.errors import McpConfigError
from skills_registry.mcp_program import Program, workspace_program

CONFIG_FILE = "mcp.json"
# "client": an entry the host passed for one session (ACP ``mcpServers``); never in a file.
Scope = Literal["user", "project", "client"]
# The ``type`` values other clients write, by what the entry has: a command or a URL.
_TYPES = {"stdio": ("stdio",), "url": ("http", "streamable-http", "streamableHttp", "sse")}
_PLAIN_NAME = re.compile(r"\A[A-Za-z0-9_.@:+-]{1,80}\Z")


@dataclass
class McpServerConfig:
    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    origin: str = ""  # the mcp.json it came from (for a client entry: who passed it)
    scope: Scope = "user"
    raw: dict[str, Any] = field(default_factory=dict)  # the entry exactly as written
    # A project entry's program files in the workspace (its command, script, config) -> sha256
    files: dict[str, str] = field(default_factory=dict)
    unheld: str = ""  # why an approval cannot hold the program (``mcp_program``)
    disabled: bool = False  # ``"disabled": true``: configured, never started
    sse: bool = False  # a ``url`` served with the HTTP+SSE transport, not streamable HTTP

    @property
    def transport(self) -> str:
        return ("sse" if self.sse else "http") if self.url else "stdio"

    @property
    def fingerprint(self) -> str:
        """sha256 of the whole entry as written (canonical JSON): any change is a new entry."""
        entry = self.raw or {
            k: v
            for k, v in (
                ("command", self.command),
                ("args", self.args),
                ("env", self.env),
                ("cwd", self.cwd),
                ("url", self.url),
                ("headers", self.headers),
            )
            if v
        }
        if self.files:  # the program the entry runs, not only how it is named
            entry = {"entry": entry, "files": self.files}
        text = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def summary(self, *, values: bool = True) -> str:
        """One line saying what the entry starts or connects to. ``values=False`` names the
        environment variables and headers without their values (they may hold secrets)."""
        if self.url:
            parts = [f"url {self.url}"]
            if self.headers:
                shown = self.headers if values else dict.fromkeys(self.headers, "…")
                parts.append("headers " + ", ".join(f"{k}: {v}" for k, v in shown.items()))
        else:
            parts = [f"command {shlex.join([self.command or '', *self.args])}"]
            if self.cwd:
                parts.append(f"cwd {self.cwd}")
        if self.env:
            shown = self.env if values else dict.fromkeys(self.env, "…")
            parts.append("env " + " ".join(f"{k}={v}" for k, v in shown.items()))
        return "; ".join(parts)


def printable(text: str, limit: int = 0) -> str:
    """Repository text made safe for one status line: control characters escaped, cut short."""
    out = "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in text)
    return out if not limit or len(out) <= limit else out[: limit - 1] + "…"


def shown_name(name: str) -> str:
    """A server name as safe to print: repository text may hold control characters or quotes,
    and thousands of characters (cut to its start, so a line naming it stays a line)."""
    if _PLAIN_NAME.match(name):
        return name
    return json.dumps(name) if len(name) <= 80 else json.dumps(name[:60])[:-1] + '…"'


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise McpConfigError(f"{where} must be an object of string values")
    return dict(value)


def _parse_server(name: str, raw: Any, origin: Path, scope: Scope) -> McpServerConfig:
    where = f"{origin}: server {shown_name(name)}"
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
    kind = raw.get("type", "stdio" if command is not None else "http")
    if kind not in _TYPES.get("stdio" if command is not None else "url", ()):
        expected = "stdio" if command is not None else "http or sse"
        raise McpConfigError(
            f"{where}: 'type' {printable(json.dumps(kind), 40)} does not fit its "
            f"{'command' if command is not None else 'url'} (use {expected})"
        )
    if not isinstance(raw.get("disabled", False), bool):
        raise McpConfigError(f"{where}: 'disabled' must be true or false")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError(f"{where}: 'args' must be a list of strings")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise McpConfigError(f"{where}: 'cwd' must be a string")
    if not name.strip():
        raise McpConfigError(f"{origin}: a server has an empty name")
    env = _str_map(raw.get("env"), f"{where}: 'env'")
    program = (
        workspace_program(origin, command, args, cwd, env) if scope == "project" else Program()
    )
    return McpServerConfig(
        name=name,
        command=command,
        args=list(args),
        env=env,
        cwd=cwd,
        url=url,
        headers=_str_map(raw.get("headers"), f"{where}: 'headers'"),
        origin=str(origin),
        scope=scope,
        raw=dict(raw),
        files=program.files,
        unheld=program.unheld,
        disabled=raw.get("disabled", False),
        sse=kind == "sse",
    )


def read_config(path: Path, scope: Scope) -> dict[str, McpServerConfig]:
    """The entries of one mcp.json (none if the file is absent); ``McpConfigError`` names the
    file and the entry when it is malformed."""
    try:
        data = config_file.load_json(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise McpConfigError(
            f"cannot read {path}: {config_file.unreadable(path, exc)}", hint=""
        ) from None
    except ValueError as exc:
        raise McpConfigError(f"{path}: not valid JSON ({exc})") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f"{path}: missing the 'mcpServers' object")
    return {name: _parse_server(name, raw, path, scope) for name, raw in sorted(servers.items())}


def default_kiln_home() -> Path:
    """``$KILN_HOME``, else ``~/.kiln``; read at call time, never at import."""
    return kiln_home()


def user_config_path(kiln_home: Path) -> Path:
    return kiln_home / CONFIG_FILE


def project_config_path(root: Path) -> Path:
    return Path(root) / ".kiln" / CONFIG_FILE
