"""Deferred tools without changing ``tools``: the ``call_tool`` proxy and ``tool_search`` answers.

A request's ``tools`` is part of the cached prefix, so it must not grow when ``tool_search``
finds something. Anthropic loads found tools by ``tool_reference`` (every deferred tool is
declared with ``defer_loading`` from the first request). Every other provider gets one fixed
proxy, ``call_tool{name, arguments}``, and the found tools' schemas in the ``tool_search``
result. MCP descriptions and those of an installed skill's sidecar tools are third-party text,
so they reach the model wrapped as external content in both places (result text and the
deferred definition).
"""

from __future__ import annotations

import json
from typing import Any

from agent.errors import ToolError
from agent.injection import external
from agent.protocols import ToolContext
from agent.tools.base import schema
from agent.types import INVALID_JSON, ToolOutput, ToolSpec

PROXY_NAME = "call_tool"
CALL_TOOL_MANUAL = (
    "Run a tool that tool_search found (skill and MCP tools are not in your tool list). Pass "
    "its qualified name and arguments matching the input schema the search result showed, e.g. "
    '{"name": "github__create_issue", "arguments": {"title": "Crash on start"}}. Call '
    "tool_search first; do not use this for built-in tools."
)
MAX_DESCRIPTION = 600


def is_third_party(tool: Any) -> bool:
    """An MCP server's tool, or a sidecar tool of a skill installed from a registry."""
    return str(getattr(tool, "source", "")).startswith("mcp:") or getattr(
        tool, "third_party", False
    )


def tool_description(tool: Any) -> str:
    """The description the model sees; a third party's text is wrapped as external content."""
    text = " ".join(str(tool.description).split())
    if len(text) > MAX_DESCRIPTION:
        text = text[: MAX_DESCRIPTION - 1] + "…"
    return external(tool.source, text) if is_third_party(tool) else text


# Keywords whose values only annotate a schema (no validation reads them): the server's words.
ANNOTATIONS = ("description", "title", "$comment", "examples", "default")
# Keywords whose values map names (a property's, a definition's) to schemas.
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def tool_schema(tool: Any) -> Any:
    """The input schema of the tool's definition; an MCP server's descriptions, titles, examples,
    defaults and comments inside it are third-party text too (a parameter's description can carry
    instructions), so every string in them is wrapped as external content. Validation ignores
    them; ``enum`` and ``const`` values are what the model sends back, and stay as written."""
    if not is_third_party(tool):
        return tool.input_schema
    return _wrap_texts(tool.input_schema, str(tool.source))


def _wrap_texts(value: Any, source: str) -> Any:
    if isinstance(value, dict):
        return {k: _wrap_keyword(k, v, source) for k, v in value.items()}
    if isinstance(value, list):
        return [_wrap_texts(v, source) for v in value]
    return value


def _wrap_keyword(key: str, value: Any, source: str) -> Any:
    if key in ANNOTATIONS:
        return _wrap_strings(value, source)
    if key in SCHEMA_MAPS and isinstance(value, dict):  # names, then schemas
        return {name: _wrap_texts(v, source) for name, v in value.items()}
    return _wrap_texts(value, source)


def _wrap_strings(value: Any, source: str) -> Any:
    if isinstance(value, str):
        return external(source, value)
    if isinstance(value, dict):
        return {k: _wrap_strings(v, source) for k, v in value.items()}
    if isinstance(value, list):
        return [_wrap_strings(v, source) for v in value]
    return value


class CallTool:
    """``call_tool{name, arguments}``; the harness unwraps it before lookup and permission, so
    the named tool is checked, authorised and reported under its own name."""

    kind = "other"

    def __init__(self) -> None:
        self.spec = ToolSpec(
            PROXY_NAME,
            CALL_TOOL_MANUAL,
            schema(
                {
                    "name": {"type": "string", "minLength": 1, "description": "qualified name"},
                    "arguments": {"type": "object", "description": "the tool's arguments"},
                },
                ["name"],
            ),
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        raise ToolError(
            "call_tool could not find the tool to run",
            suggestion="pass the qualified name a tool_search result showed",
        )


def unwrap_proxy(name: str, args: Any) -> tuple[str, Any]:
    """``call_tool{name, arguments}`` -> (name, arguments); anything else unchanged.

    Arguments given as a JSON string (a common model habit) are decoded.
    """
    if name != PROXY_NAME or not isinstance(args, dict) or not isinstance(args.get("name"), str):
        return name, args
    inner = args.get("arguments", {})
    if isinstance(inner, str):
        try:
            inner = json.loads(inner) if inner.strip() else {}
        except json.JSONDecodeError:
            inner = {INVALID_JSON: inner}
    return args["name"].strip(), inner


def render_found(matches: list[Any]) -> ToolOutput:
    """The ``tool_search`` answer: text with each tool's schema (for the proxy) and references."""
    lines = [
        f"{len(matches)} tool(s) found. Run one with call_tool "
        '{"name": <name>, "arguments": {...}} (or call it by name where your tool list has it):'
    ]
    for tool in matches:
        lines.append(f"- name: {tool.name}")
        lines.append(f"  description: {tool_description(tool)}")
        shown = json.dumps(tool.input_schema, sort_keys=True)
        # an MCP schema is third-party text as a whole: descriptions, defaults, enums, names
        lines.append(
            f"  input_schema: {external(tool.source, shown) if is_third_party(tool) else shown}"
        )
    return ToolOutput("\n".join(lines), [t.name for t in matches])
