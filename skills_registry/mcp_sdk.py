"""The official ``mcp`` SDK as Kiln reads it: imported off the event loop, its logs kept to one
line per server mistake, its results read alike from 1.x (camelCase) and 2.x (snake_case)
models, its failures reduced to one reason, and a tool's input schema checked before use."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import warnings
from typing import Any

from skills_registry.mcp_config import printable

CONNECTION_CLOSED = -32000  # the SDK's error code when the server went away mid-request


def sdk_field(obj: Any, snake: str, camel: str, default: Any = None) -> Any:
    """SDK 2.x models use snake_case attributes, 1.x camelCase; accept both."""
    value = getattr(obj, snake, None)
    return value if value is not None else getattr(obj, camel, default)


def result_text(result: Any) -> str:
    parts = []
    for block in sdk_field(result, "content", "content", []) or []:
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
    structured = sdk_field(result, "structured_content", "structuredContent")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    return "\n".join(parts)


SDK_MODULES = ("mcp", "mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.sse")


async def import_sdk() -> None:
    """Import the MCP SDK in a worker thread: imported on the event loop by the first start, it
    froze every request of the process for seconds (and ate into the start timeout)."""
    await asyncio.to_thread(lambda: [importlib.import_module(m) for m in SDK_MODULES])
    _quiet_sdk_logs()


class _OneLine(logging.Filter):
    """The SDK logs a traceback for each line a server prints that is not JSON-RPC; a server's
    mistake is one warning line (Kiln's logs hold no traceback for what others got wrong)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()}: {failure_reason(record.exc_info[1])}"
            record.args, record.exc_info, record.exc_text = None, None, None
        return True


def _quiet_sdk_logs() -> None:
    sdk = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(f, _OneLine) for f in sdk.filters):
        sdk.addFilter(_OneLine())


def connection_closed(exc: BaseException) -> bool:
    """Whether the SDK failed a request because the server went away (its process exited)."""
    return getattr(getattr(exc, "error", None), "code", None) == CONNECTION_CLOSED


def failure_reason(exc: BaseException) -> str:
    """The innermost useful message (anyio wraps failures in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    errors = getattr(exc, "errors", None)  # pydantic: the first problem, where it is
    if callable(errors) and type(exc).__name__ == "ValidationError":
        first = (errors() or [{}])[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return printable(f"{where}: {first.get('msg', exc)}" if where else str(first), 300)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text


def schema_problem(schema: Any) -> str:
    """Why ``schema`` is no valid JSON Schema of an object (one line), or ""."""
    import jsonschema

    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its input schema is not a JSON Schema of an object"
    try:
        with warnings.catch_warnings():  # an unknown "$schema" warns, then the latest draft checks
            warnings.simplefilter("ignore")
            validator = jsonschema.validators.validator_for(schema)
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "schema"
        return f"its input schema is invalid at {where}: {printable(exc.message, 200)}"
    return ""
