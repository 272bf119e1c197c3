"""A client's ``_meta`` kept as metadata, never as arguments.

The Python ACP SDK merges a request's ``_meta`` keys into the keyword arguments of the handler,
over the parameters it validated: ``{"cwd": "/ok", "_meta": {"cwd": "/"}}`` would reach
``new_session`` with ``cwd="/"``, ``{"_meta": {"session_id": …}}`` would retarget a prompt,
``{"_meta": {"prompt": "x"}}`` would skip the SDK's validation, and ``{"_meta": {"self": 1}}``
would crash the handler. The stdio guard (``shield``) therefore nests the whole ``_meta`` under
one key no parameter can be named (``kiln/meta``); handlers read it with ``client_meta``.

It also hands ``session/new`` and ``session/load`` their ``mcpServers`` as sent (``RAW_MCP_KEY``):
the SDK silently drops entries it cannot parse, and a malformed entry must be an error instead.
``"mcpServers": null`` is ``[]``, as ACP's schema says (``x-deserialize-default-on-null``) and
the official SDKs read it; the Python SDK refused it.
"""

from __future__ import annotations

from typing import Any

from lsp_server.core.config import typed_options

META_KEY = "kiln/meta"  # the client's _meta, whole
RAW_MCP_KEY = "kiln/mcpServers"  # mcpServers exactly as the client sent them
SESSION_METHODS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})


def shield(message: dict[str, Any]) -> dict[str, Any]:
    """The request or notification with its ``_meta`` nested (the same object if unchanged)."""
    params = message.get("params")
    if not isinstance(message.get("method"), str) or not isinstance(params, dict):
        return message
    if message["method"] in SESSION_METHODS and params.get("mcpServers", []) is None:
        params = {**params, "mcpServers": []}
        message = {**message, "params": params}
    meta = params.get("_meta")
    if meta is not None and not isinstance(meta, dict):
        return message  # the SDK reads it as absent (ACP: `_meta` defaults on error)
    shielded: dict[str, Any] = {META_KEY: meta} if meta else {}
    if message["method"] in SESSION_METHODS and "mcpServers" in params:
        shielded[RAW_MCP_KEY] = params["mcpServers"]
    if not shielded and "_meta" not in params:
        return message
    return {**message, "params": {**params, "_meta": shielded}}


def client_meta(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The ``_meta`` object the client sent with this request ({} if none)."""
    meta = kwargs.get(META_KEY)
    return meta if isinstance(meta, dict) else {}


def kiln_options(kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """``_meta.kiln``: Kiln options a client may send with initialize and session/new, checked
    as ``typed_options`` checks every client's options (InvalidParams naming the field: an
    ill-typed value, an unknown provider, ``mode`` and ``permissionMode`` that differ)."""
    options = client_meta(kwargs).get("kiln")
    if options is None:
        return None
    return typed_options(options, "_meta.kiln")
