"""Deferred tools: schemas that stay out of the prompt prefix until ``tool_search`` finds them.

Two sources feed one ``ToolCatalog``: sidecar tools a skill declares in ``tools/<name>.json``
(run here as a script with a timeout and an output cap) and MCP server tools (see
``mcp_source``). Every tool gets a qualified name ``namespace__tool`` that is safe for the
provider APIs, so two servers may both offer ``search`` without clashing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skills_registry import json_limits, launcher
from skills_registry.errors import ToolCallError
from skills_registry.tool_search import SearchDoc, ToolIndex, schema_param_names

SEPARATOR = "__"
MAX_NAME = 64  # the strictest provider limit (OpenAI function names)
DEFAULT_TIMEOUT = 30.0
DEFAULT_OUTPUT_CAP = 64 * 1024
STDERR_TAIL = 2000
_API_NAME = re.compile(r"\A[A-Za-z0-9_-]+\Z")
# Sidecar scripts are third-party code: they get the environment minus anything secret-looking.
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)
_INTERPRETERS = {".py": [sys.executable], ".sh": ["/bin/sh"], ".js": ["node"], ".mjs": ["node"]}

Caller = Callable[[dict[str, Any]], Awaitable[str]]


def api_safe(text: str) -> str:
    """Map a namespace or tool name onto ``[A-Za-z0-9_-]``; a short hash keeps it unique."""
    if _API_NAME.match(text) and SEPARATOR not in text:
        return text
    cleaned = re.sub(r"[^A-Za-z0-9-]+", "_", text).strip("_") or "ns"
    return f"{cleaned[:40]}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def qualify(namespace: str, tool: str) -> str:
    tool_part = tool if _API_NAME.match(tool) else api_safe(tool)
    name = f"{api_safe(namespace)}{SEPARATOR}{tool_part}"
    if len(name) > MAX_NAME:
        name = name[: MAX_NAME - 7] + "-" + hashlib.sha256(name.encode()).hexdigest()[:6]
    return name


@dataclass
class DeferredTool:
    name: str  # qualified: namespace__tool
    namespace: str
    description: str
    input_schema: dict[str, Any]
    source: str  # "skill:NAME" or "mcp:SERVER"
    tool_name: str = ""  # the name its source knows it by
    # Written by a third party (an MCP server, a skill installed from a registry): its
    # description and schema reach the model as data.
    third_party: bool = False
    _caller: Caller | None = field(default=None, repr=False, compare=False)

    async def call(self, args: dict[str, Any]) -> str:
        """Run the tool; raise ``ToolCallError`` (with a hint) when it fails."""
        if self._caller is None:
            raise ToolCallError(f"tool '{self.name}' has no runner", hint="reload the tool source")
        missing = [p for p in self.input_schema.get("required", []) or [] if p not in args]
        if missing:
            raise ToolCallError(
                f"tool '{self.name}' is missing required argument(s): {', '.join(missing)}",
                hint=f"parameters: {', '.join(schema_param_names(self.input_schema)) or 'none'}",
            )
        return await self._caller(args)

    def to_spec(self) -> dict[str, Any]:
        """The schema as providers take it (``agent.types.ToolSpec`` has the same fields)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    def param_summary(self) -> str:
        """``path: string (required), limit: integer`` - for short tool_search answers."""
        props = self.input_schema.get("properties") or {}
        required = set(self.input_schema.get("required") or [])
        parts = []
        for pname, pschema in props.items():
            kind = pschema.get("type", "any") if isinstance(pschema, dict) else "any"
            if isinstance(kind, list):
                kind = "|".join(str(k) for k in kind)
            parts.append(f"{pname}: {kind}{' (required)' if pname in required else ''}")
        return ", ".join(parts) or "no parameters"


class ToolCatalog:
    """All deferred tools plus one-line namespace descriptions; searchable with BM25."""

    def __init__(self) -> None:
        self._tools: dict[str, DeferredTool] = {}
        self._namespaces: dict[str, str] = {}
        self._index: ToolIndex | None = None

    def add(self, tool: DeferredTool) -> None:
        """Add or replace a tool (a reloaded source replaces its tools by name)."""
        self._tools[tool.name] = tool
        self._namespaces.setdefault(tool.namespace, "")
        self._index = None

    def extend(self, tools: Iterable[DeferredTool]) -> None:
        for tool in tools:
            self.add(tool)

    def remove_namespace(self, namespace: str) -> None:
        self._tools = {n: t for n, t in self._tools.items() if t.namespace != namespace}
        self._namespaces.pop(namespace, None)
        self._index = None

    def describe_namespace(self, namespace: str, description: str) -> None:
        self._namespaces[namespace] = " ".join(description.split())

    def add_skill(self, skill: Any, **limits: float) -> list[str]:
        """Add a skill's sidecar tools under its namespace; returns warnings for bad ones."""
        warnings: list[str] = []
        tools = load_sidecar_tools(skill, warnings=warnings, **limits)  # type: ignore[arg-type]
        self.remove_namespace(skill.name)
        if tools:
            self.extend(tools)
            self.describe_namespace(skill.name, skill.description)
        return warnings

    def get(self, name: str) -> DeferredTool | None:
        return self._tools.get(name)

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self._tools.values(), key=lambda t: t.name))

    def namespaces(self) -> dict[str, str]:
        """namespace -> one-line description, sorted; namespaces with no tools are omitted."""
        used = {t.namespace for t in self._tools.values()}
        return {ns: self._namespaces.get(ns, "") for ns in sorted(used)}

    def search(self, query: str, k: int = 5) -> list[DeferredTool]:
        if self._index is None:
            docs = [
                SearchDoc(
                    t.name, t.namespace, t.description, tuple(schema_param_names(t.input_schema))
                )
                for t in self._tools.values()
            ]
            self._index = ToolIndex(docs)
        return [self._tools[doc.name] for doc, _score in self._index.search(query, k)]


# ---- sidecar tools declared by a skill ------------------------------------------------------


def _script_env(skill_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _SECRET.search(k)}
    env["KILN_SKILL_DIR"] = str(skill_dir)
    return env


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, bool]:
    """Read up to ``cap`` bytes; report whether there was more (the caller then stops the
    process rather than draining an endless flood)."""
    data = bytearray()
    while len(data) <= cap:
        chunk = await stream.read(min(65536, cap + 1 - len(data)))
        if not chunk:
            return bytes(data), False
        data.extend(chunk)
    return bytes(data[:cap]), True


async def _read_tail(stream: asyncio.StreamReader, keep: int) -> bytes:
    tail = b""
    while chunk := await stream.read(65536):
        tail = (tail + chunk)[-keep:]
    return tail


def _kill(proc: asyncio.subprocess.Process, tracked: launcher.Tracked) -> None:
    """Kill the script's process group, and what the launcher follows past it (a sandbox's
    pid 1, which may have left the group: ``launcher.track``)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    tracked.kill()


async def _stop(proc: asyncio.subprocess.Process, tracked: launcher.Tracked) -> None:
    """Kill the script's process group and wait (bounded) for it to end, draining its output:
    asyncio reports the exit only once every pipe has reached EOF."""
    _kill(proc, tracked)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_read_tail(proc.stdout, 0), 5)  # type: ignore[arg-type]
        await asyncio.wait_for(proc.wait(), 5)


class _NotStarted(Exception):
    """The launcher lost a path it mounts before the script started (``launcher.went_away``)."""


async def run_script(
    argv: list[str],
    args: dict[str, Any],
    *,
    cwd: Path,
    label: str,
    timeout: float = DEFAULT_TIMEOUT,
    output_cap: int = DEFAULT_OUTPUT_CAP,
) -> str:
    """Run a tool script: JSON arguments on stdin, result on stdout.

    Bounded every way a script can misbehave: a timeout (or a cancelled call) kills its whole
    process group, stdout beyond ``output_cap`` is cut (and the script stopped), a non-zero exit
    becomes an error carrying the tail of stderr.
    """
    try:
        return await _run_script(argv, args, cwd, label, timeout, output_cap, again=True)
    except _NotStarted:  # a path the sandbox covers went away as it started: mounts built again
        return await _run_script(argv, args, cwd, label, timeout, output_cap, again=False)


async def _run_script(
    argv: list[str],
    args: dict[str, Any],
    cwd: Path,
    label: str,
    timeout: float,
    output_cap: int,
    *,
    again: bool,
) -> str:
    tracked: launcher.Tracked = launcher.Untracked(argv)
    try:
        try:
            argv, env = launcher.prepare(argv, cwd, _script_env(cwd))
            tracked = launcher.track(argv)
            spawn = asyncio.ensure_future(
                asyncio.create_subprocess_exec(
                    *tracked.argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    cwd=cwd,
                    env=env,
                    start_new_session=True,
                    pass_fds=tracked.pass_fds,
                )
            )
            # The process exists before the spawn's await returns: cancelled in between, asyncio
            # killed the script alone and waited for its output to close, which what it started
            # held open; the call never ended.
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await _stop(await spawn, tracked)
            raise
        except OSError as exc:
            raise ToolCallError(
                f"{label}: cannot start {argv[0]}: {exc.strerror or exc}",
                hint="check the tool's command path and that it is executable",
            ) from None
        tracked.started()
        assert proc.stdin and proc.stdout and proc.stderr

        async def feed() -> None:
            try:
                proc.stdin.write(json.dumps(args).encode())  # type: ignore[union-attr]
                await proc.stdin.drain()  # type: ignore[union-attr]
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                proc.stdin.close()  # type: ignore[union-attr]

        async def collect() -> tuple[bytes, bool, bytes, int]:
            feeder = asyncio.create_task(feed())
            err_task = asyncio.create_task(_read_tail(proc.stderr, STDERR_TAIL))  # type: ignore[arg-type]
            out, truncated = await _read_capped(proc.stdout, output_cap)  # type: ignore[arg-type]
            if truncated:
                _kill(proc, tracked)
                # Drain what the pipe still holds: asyncio reports the exit only once every pipe
                # has reached EOF, and a paused reader never gets there.
                await _read_tail(proc.stdout, 0)  # type: ignore[arg-type]
            code = await proc.wait()
            err = await err_task
            await feeder
            return out, truncated, err, code

        try:
            out, truncated, err, code = await asyncio.wait_for(collect(), timeout)
        except asyncio.CancelledError:
            # The turn was cancelled: the script goes with it. Before, it ran on (and the guard's
            # undo of what it may not leave came while it could still write).
            await _stop(proc, tracked)
            raise
        except TimeoutError:
            await _stop(proc, tracked)
            raise ToolCallError(
                f"{label}: timed out after {timeout:g}s and was stopped",
                hint="narrow the request, or the tool may be waiting for input it will never get",
            ) from None
        text = out.decode("utf-8", errors="replace")
        if truncated:
            return text + f"\n[output truncated at {output_cap} bytes]"
        if code != 0 and again and not out and launcher.went_away(argv, code, err):
            raise _NotStarted
        if code != 0:
            tail = err.decode("utf-8", errors="replace").strip()
            detail = f": {tail[-STDERR_TAIL:]}" if tail else " (no stderr)"
            raise ToolCallError(f"{label}: exited with status {code}{detail}")
        return text
    finally:
        tracked.close()


def _sidecar_tool(
    skill: Any, skill_dir: Path, spec_path: Path, timeout: float, cap: int
) -> DeferredTool:
    skill_name = getattr(skill, "name", None) or skill_dir.name
    data = json_limits.loads(spec_path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    for key in ("name", "description", "command"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ValueError(f"'{key}' must be a non-empty string")
    schema = data.get("input_schema", {"type": "object", "properties": {}})
    if not isinstance(schema, dict):
        raise ValueError("'input_schema' must be a JSON object")
    root = skill_dir.resolve()
    script = (root / data["command"]).resolve()
    if not script.is_relative_to(root):
        raise ValueError(f"command {data['command']!r} resolves outside the skill folder")
    if not script.is_file():
        raise ValueError(f"command {data['command']!r} does not exist")
    argv = [*_INTERPRETERS.get(script.suffix, []), str(script)]
    name = qualify(skill_name, data["name"])

    async def caller(args: dict[str, Any]) -> str:
        return await run_script(argv, args, cwd=root, label=name, timeout=timeout, output_cap=cap)

    return DeferredTool(
        name=name,
        namespace=skill_name,
        description=data["description"].strip(),
        input_schema=schema,
        source=f"skill:{skill_name}",
        tool_name=data["name"],
        third_party=bool(getattr(skill, "third_party", False)),
        _caller=caller,
    )


def load_sidecar_tools(
    skill: Any,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    output_cap: int = DEFAULT_OUTPUT_CAP,
    warnings: list[str] | None = None,
) -> list[DeferredTool]:
    """Tools a skill declares in ``tools/*.json`` (``skill`` is a ``Skill`` or a folder path).

    A malformed declaration is skipped with a warning appended to ``warnings``.
    """
    skill_dir = Path(getattr(skill, "path", skill))
    tools_dir = skill_dir / "tools"
    found: list[DeferredTool] = []
    if not tools_dir.is_dir():
        return found
    root = skill_dir.resolve()
    for spec_path in sorted(tools_dir.glob("*.json"))[:100]:
        try:
            if not spec_path.resolve().is_relative_to(root):
                # a link to another skill's tools (one of the user's private skills, say)
                raise ValueError("it resolves outside the skill folder")
            found.append(_sidecar_tool(skill, skill_dir, spec_path, timeout, output_cap))
        except (OSError, ValueError) as exc:
            if warnings is not None:
                warnings.append(f"{spec_path}: skipped tool: {exc}")
    return found
