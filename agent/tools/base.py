"""A small helper to declare a tool from a spec and an async function, plus argument checking
(jsonschema, imported on the first call: with its dependencies ~60 ms a process that calls no
tool, `kiln --help` or a run that only answers, need not pay)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent.errors import ToolError
from agent.protocols import ToolContext
from agent.types import INVALID_JSON, ToolOutput, ToolSpec

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


def check_arguments(spec: ToolSpec, args: Any) -> dict[str, Any]:
    """Validate model-supplied arguments; the error names the problem and shows the schema."""
    if isinstance(args, dict) and INVALID_JSON in args:
        raise ToolError(
            f"the arguments for {spec.name} were not valid JSON: {str(args[INVALID_JSON])[:200]}",
            suggestion="send the arguments as one JSON object matching the tool's input schema",
        )
    if not isinstance(args, dict):
        raise ToolError(
            f"arguments for {spec.name} must be a JSON object, got {type(args).__name__}"
        )
    import jsonschema

    try:
        jsonschema.validate(args, spec.input_schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
        raise ToolError(
            f"invalid arguments for {spec.name}: {where}: {exc.message}",
            suggestion=f"expected schema: {spec.input_schema.get('properties', {})}; required: {spec.input_schema.get('required', [])}",
        ) from None
    return args
