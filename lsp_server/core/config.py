"""What a client configures (initializationOptions, workspace/configuration, session options)
and what a transport must supply (``Frontend``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from agent.config import STEP_LIMIT
from agent.events import AgentEvent
from agent.protocols import EditOutcome, EditProposal
from agent.providers import provider_names
from kiln_errors.setting import number_in, whole_in
from kiln_errors.shown import shown
from lsp_server.core.errors import InvalidParams

EDIT_MODES = ("ask", "deferred", "auto")
MAX_STEPS = STEP_LIMIT  # model requests in one turn, as `kiln run --max-steps` takes them
PERMISSION_TIMEOUT_MAX = 86_400.0  # a day: an unanswered question is withdrawn by then
MCP_START_TIMEOUT_MAX = 600.0  # ten minutes for an MCP server to start and answer


# The options a client sends: its key -> (CoreConfig attribute, the JSON type it takes).
OPTIONS: dict[str, tuple[str, str]] = {
    "provider": ("provider", "string"), "model": ("model", "string"), "mode": ("mode", "string"),
    "permissionMode": ("mode", "string"), "editMode": ("edit_mode", "string"),
    "permissionTimeout": ("permission_timeout", "number"), "maxSteps": ("max_steps", "number"),
    "mcpStartTimeout": ("mcp_start_timeout", "number"),
}  # fmt: skip


def typed_options(options: Any, where: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    """``options`` as a client sent them in JSON, each known key holding its JSON type (and
    each of ``extra``'s, key -> type): ``"30"`` is no number of steps, ``true`` no number of
    seconds, ``5`` no model name. InvalidParams names the field as ``where.key`` otherwise;
    null is an option not given. The ``KILN_ACP_*`` variables, strings by nature, skip this.
    A provider Kiln does not know is refused here, where it is sent (not at the first model
    call), and so are ``mode`` and its other name ``permissionMode`` naming two different
    modes: neither silently wins. The result names the mode as ``mode`` only. Shared by
    ``kiln acp``'s ``_meta.kiln`` and ``kiln lsp``'s options and session params."""
    if not isinstance(options, dict):
        raise InvalidParams(f"{where} must be an object, got {_shown(options)}")
    kinds = {key: kind for key, (_, kind) in OPTIONS.items()} | (extra or {})
    for key, kind in kinds.items():
        value = options.get(key)
        if value is None:
            continue
        if kind == "number":
            right = isinstance(value, int | float) and not isinstance(value, bool)
        else:
            right = isinstance(value, {"string": str, "boolean": bool}[kind])
        if not right:
            raise InvalidParams(f"{where}.{key} must be a {kind}, got {_shown(value)}")
    provider, known = options.get("provider"), provider_names()
    if provider is not None and provider not in known:
        raise InvalidParams(
            f"{where}.provider must be one of {', '.join(known)}, got '{shown(provider, 60)}'"
        )
    mode, alias = options.get("mode"), options.get("permissionMode")
    if mode is not None and alias is not None and mode != alias:
        raise InvalidParams(
            f"{where}.mode '{shown(mode, 60)}' and {where}.permissionMode "
            f"'{shown(alias, 60)}' differ: they are one option, send one of them"
        )
    if alias is None:
        return options
    return {key: value for key, value in options.items() if key != "permissionMode"} | {
        "mode": alias
    }


@dataclass
class CoreConfig:
    """Settings a client sends (initializationOptions / workspace/configuration)."""

    provider: str | None = None
    model: str | None = None
    mode: str = "ask"  # agent permission mode: ask | auto-edit | ci | yolo
    edit_mode: str = "ask"  # ask | deferred | auto
    permission_timeout: float = 120.0
    max_steps: int = 50
    mcp_start_timeout: float = 10.0  # seconds each MCP server a client passes may take to start

    @classmethod
    def from_options(
        cls, options: dict[str, Any] | None, base: CoreConfig | None = None
    ) -> CoreConfig:
        """Merge camelCase client options over ``base``; unknown keys are ignored."""
        config = replace(base) if base else cls()
        options = options or {}
        if not isinstance(options, dict):
            raise InvalidParams("options must be an object")
        for key, (attr, _) in OPTIONS.items():
            if options.get(key) is not None:
                setattr(config, attr, options[key])
        config.validate()
        return config

    def validate(self) -> None:
        from agent.permissions import MODES

        if self.mode not in MODES:
            raise InvalidParams(
                f"unknown mode {self.mode!r}", hint=f"use one of: {', '.join(MODES)}"
            )
        if self.edit_mode not in EDIT_MODES:
            raise InvalidParams(
                f"unknown editMode {self.edit_mode!r}", hint=f"use one of: {', '.join(EDIT_MODES)}"
            )
        self.max_steps = _steps(self.max_steps)
        self.permission_timeout = _seconds(
            "permissionTimeout", self.permission_timeout, PERMISSION_TIMEOUT_MAX
        )
        self.mcp_start_timeout = _seconds(
            "mcpStartTimeout", self.mcp_start_timeout, MCP_START_TIMEOUT_MAX
        )


def _shown(value: Any) -> str:
    """A refused value for a one-line message, as JSON names it; a long one cut."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, int):
        try:
            text = str(value)
        except ValueError:  # an integer of thousands of digits
            text = "a number of thousands of digits"
    else:
        kinds: dict[type, str] = {dict: "an object", list: "an array"}
        text = kinds.get(type(value), type(value).__name__)
    return text if len(text) <= 20 else f"{text[:12]}…"


def _seconds(name: str, value: Any, most: float) -> float:
    """A timeout setting in seconds, above 0 and at most ``most``: ``1e300`` or infinity is
    no timeout anyone waits out (and ``asyncio`` could not schedule it), ``true`` is no
    number. A string is read as a number (the ``KILN_ACP_*`` variables are strings)."""
    seconds = None
    if isinstance(value, str):
        seconds = number_in(value, -math.inf, math.inf)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an integer past a float
            seconds = math.inf
    if seconds is None or not (math.isfinite(seconds) and 0 < seconds <= most):
        raise InvalidParams(
            f"{name} must be a positive number of seconds, at most {most:,g}, got {_shown(value)}"
        )
    return seconds


def _steps(value: Any) -> int:
    """``maxSteps`` as a whole number from 1 to ``MAX_STEPS``: a fraction is not silently cut
    (``2.5`` was read as 2), and ``1e30`` or infinity is no limit a turn could reach."""
    if isinstance(value, str):
        number = whole_in(value, -(2**63), 2**63)
        if number is None:
            raise InvalidParams(f"maxSteps must be a whole number, got {value[:40]!r}")
        value = number
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParams(f"maxSteps must be a whole number, got {type(value).__name__}")
    if isinstance(value, float) and not value.is_integer():  # NaN and infinities included
        raise InvalidParams(f"maxSteps must be a whole number, got {value}")
    if not 1 <= value <= MAX_STEPS:
        try:
            shown = str(value) if len(str(value)) <= 20 else f"{str(value)[:12]}…"
        except ValueError:  # an integer of thousands of digits
            shown = "a number of thousands of digits"
        raise InvalidParams(f"maxSteps must be from 1 to {MAX_STEPS:,}, got {shown}")
    return int(value)


class Frontend(Protocol):
    """What a transport supplies; every method is called on the server's event loop."""

    def render(
        self, event: AgentEvent, *, root: Path, context_window: int = 0
    ) -> dict[str, Any] | None:
        """The update dict for an agent event in this transport's shape (None: nothing)."""
        ...

    async def send_update(self, session_id: str, update: dict[str, Any]) -> None: ...

    async def ask_permission(
        self, session_id: str, tool_call: dict[str, Any], options: list[dict[str, str]]
    ) -> Any:
        """Return the client's answer (an ACP RequestPermissionResponse dict or an optionId)."""
        ...

    def read_buffer(self, path: Path) -> str | None: ...

    async def apply_edit(self, session_id: str, proposal: EditProposal) -> EditOutcome: ...
