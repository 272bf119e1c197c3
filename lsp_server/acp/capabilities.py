"""A client's capability flags read as ACP's schema reads them, before the SDK sees them.

ACP types ``fs.readTextFile``, ``fs.writeTextFile`` and ``terminal`` as booleans and reads a
value that is not one as the default, false (``x-deserialize-default-on-error``), as the
official SDKs do. The Python SDK's lax parsing turned ``1``, ``"yes"`` or ``"true"`` into true,
and Kiln then sent ``fs/*`` requests to a client that had not advertised them.
"""

from __future__ import annotations

from typing import Any

FLAGS = (("fs", "readTextFile"), ("fs", "writeTextFile"), (None, "terminal"))


def booleans_only(message: dict[str, Any]) -> dict[str, Any]:
    """The ``initialize`` request with each flag that is not a boolean set to false (the same
    object when every flag is a boolean or absent)."""
    params = message.get("params")
    if message.get("method") != "initialize" or not isinstance(params, dict):
        return message
    caps = params.get("clientCapabilities")
    if not isinstance(caps, dict):
        return message
    fixed = {**caps}
    for group, flag in FLAGS:
        holder = fixed.get(group) if group else fixed
        if not isinstance(holder, dict) or isinstance(holder.get(flag, False), bool):
            continue
        if group:
            fixed[group] = {**holder, flag: False}
        else:
            fixed[flag] = False
    if fixed == caps:
        return message
    return {**message, "params": {**params, "clientCapabilities": fixed}}
