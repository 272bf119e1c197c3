"""A small helper to declare a tool from a spec and an async function, plus argument checking
(jsonschema, imported on the first call: with its dependencies ~60 ms a process that calls no
tool, `kiln --help` or a run that only answers, need not pay)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent.errors import ToolError
from agent.protocols import ToolContext
from agent.types import INVALID_JSON, ToolOutput, ToolSpec
from kiln_errors.shown import cut, shown
from skills_registry import json_limits

_QUOTED = 200  # characters of a wrong value quoted back in an error

Runner = Callable[[dict[str, Any], ToolContext], Awaitable[str | ToolOutput]]


@dataclass
class FunctionTool:
    spec: ToolSpec
    kind: str
    fn: Runner

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        return await self.fn(args, ctx)


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}  # fmt: skip


def _json_problem(raw: str) -> str:
    """Why arguments the provider layer kept raw are not one JSON object (``parse_arguments``)."""
    deep = f"nest deeper than {json_limits.MAX_DEPTH} levels"
    try:
        value = json.loads(raw)
    except RecursionError:
        return deep
    except ValueError:
        return "were not valid JSON"
    if isinstance(value, dict):  # parsed, so kept raw for its depth
        return deep
    return f"were a JSON {_JSON_KINDS[type(value)]}, not an object"


def _long_texts(value: Any) -> set[str]:
    """Every key and string value in ``value`` too long to be quoted back whole."""
    if isinstance(value, dict):
        found = {k for k in value if len(k) > _QUOTED}
        for item in value.values():
            found |= _long_texts(item)
        return found
    if isinstance(value, list):
        return set().union(*map(_long_texts, value)) if value else set()
    return {value} if isinstance(value, str) and len(value) > _QUOTED else set()


def _shortened(message: str, args: dict[str, Any]) -> str:
    """A schema error as one line of reasonable length: jsonschema quotes the offending value
    (or key) whole, and a 25,000-character wrong value quoted back helps the model no more
    than its start and end; other reprs (a list, a dict) are cut the same way."""
    for text in sorted(_long_texts(args), key=len, reverse=True):
        message = message.replace(repr(text), repr(cut(text, _QUOTED)))
    return shown(message, 1_000)


def check_arguments(spec: ToolSpec, args: Any, *, nul: bool = False) -> dict[str, Any]:
    """Validate model-supplied arguments; the error names the problem and shows the schema.
    A NUL in a string is refused unless ``nul`` (an outside tool, which gets them as JSON)."""
    if isinstance(args, dict) and INVALID_JSON in args:
        raw = str(args[INVALID_JSON])
        raise ToolError(
            f"the arguments for {spec.name} {_json_problem(raw)}: {shown(raw)}",
            suggestion="send the arguments as one JSON object matching the tool's input schema",
        )
    if not isinstance(args, dict):
        raise ToolError(
            f"arguments for {spec.name} must be a JSON object, got {type(args).__name__}"
        )
    if (bad := json_limits.lone_surrogate(args)) is not None:  # UTF-8 cannot hold it
        raise ToolError(
            f"the arguments for {spec.name} hold a lone surrogate, which is not text: {shown(bad)}",
            suggestion="send the characters themselves (a file name as list_files shows it)",
        )
    if not nul and (bad := json_limits.unstorable_text(args)) is not None:  # a NUL, then
        raise ToolError(  # no path, command or file line can hold one
            f"the arguments for {spec.name} hold a NUL character (\\x00): {shown(bad)}",
            suggestion="send the text without NUL characters",
        )
    import jsonschema

    try:
        jsonschema.validate(args, spec.input_schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
        raise ToolError(
            f"invalid arguments for {spec.name}: {where}: {_shortened(exc.message, args)}",
            suggestion=f"expected schema: {spec.input_schema.get('properties', {})}; required: {spec.input_schema.get('required', [])}",
        ) from None
    return args
