"""Test doubles that behave: a real HTTP server speaking the providers' wire formats.

``WireServer`` is imported lazily so ``python -m agent.testing.wire_server`` does not find the
module already loaded (and nothing heavy happens on ``import agent.testing``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["WireServer"]


def __getattr__(name: str) -> Any:
    if name == "WireServer":
        from agent.testing.wire_server import WireServer

        return WireServer
    raise AttributeError(name)
