"""Typed params of the ``kiln/*`` methods, read from the JSON a client sent.

One frozen dataclass per method (snake_case fields, camelCase on the wire). ``parse`` turns the
raw params (an object, or omitted) into that dataclass or raises ``InvalidParams`` naming the
field, so handlers never index into dicts or guess at types. Unknown keys are ignored, as LSP
clients add fields over time.
"""

from __future__ import annotations

import dataclasses
import types as pytypes
import typing
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union

from lsp_server.core import InvalidParams
from lsp_server.core.config import typed_options

P = TypeVar("P")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def parse(cls: type[P], raw: Any) -> P:
    """``raw`` (a JSON object or None) as ``cls``; InvalidParams on a missing or ill-typed field.
    An empty array is no params too: Lua encodes an empty table as ``[]``, so Neovim's
    ``client:request("kiln/hello", {})`` sends ``"params": []``."""
    if raw is None or raw == []:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams("params must be an object")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        key = camel(f.name)
        if key not in raw or raw[key] is None:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise InvalidParams(f"missing required param {key!r}")
            continue
        value = raw[key]
        if not _matches(value, hints[f.name]):
            raise InvalidParams(f"param {key!r} has the wrong type")
        if isinstance(value, str) and not value and f.default is dataclasses.MISSING:
            raise InvalidParams(f"param {key!r} must not be empty")
        if isinstance(value, float) and not _admits_float(hints[f.name]):
            value = int(value)  # an integral float, as LSP's own params take it (``20.0``)
        values[f.name] = value
    return cls(**values)


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (Union, pytypes.UnionType):
        return any(_matches(value, arm) for arm in typing.get_args(hint))
    if origin is Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:  # an integral float passes, as in LSP's own params: ``1.0`` is 1
        if isinstance(value, float):
            return value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, origin or hint)


def _admits_float(hint: Any) -> bool:
    if hint is float or hint is Any:
        return True
    if typing.get_origin(hint) in (Union, pytypes.UnionType):
        return any(_admits_float(arm) for arm in typing.get_args(hint))
    return False


# ---- the methods' params ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class NoParams:
    """Methods that take nothing (``params`` may be ``{}``, ``null`` or omitted)."""


@dataclass(frozen=True, kw_only=True)
class SessionRef:
    session_id: str


@dataclass(frozen=True, kw_only=True)
class SessionOptions:
    """Per-session overrides of the server settings (``CoreConfig.from_options`` keys)."""

    mode: str | None = None
    permission_mode: str | None = None  # another name of mode, as in initializationOptions
    edit_mode: str | None = None
    provider: str | None = None
    model: str | None = None
    # Any JSON number: ``CoreConfig`` holds the rule (a whole number from 1 to 10,000; ``30.0``
    # passes as 30) and its one line, the same for kiln acp's ``_meta.kiln.maxSteps``.
    max_steps: float | None = None
    permission_timeout: float | None = None

    def options(self) -> dict[str, Any]:
        """The overrides as ``CoreConfig.from_options`` reads them; InvalidParams for a
        provider Kiln does not know, or ``mode`` and ``permissionMode`` that differ."""
        given = {
            camel(f.name): getattr(self, f.name)
            for f in dataclasses.fields(SessionOptions)
            if getattr(self, f.name) is not None
        }
        return typed_options(given, "params")


@dataclass(frozen=True, kw_only=True)
class SessionNewParams(SessionOptions):
    cwd: str | None = None


@dataclass(frozen=True, kw_only=True)
class SessionLoadParams(SessionOptions):
    session_id: str
    replay: bool = True


@dataclass(frozen=True, kw_only=True)
class SessionListParams:
    cwd: str | None = None
    cursor: str | None = None


@dataclass(frozen=True, kw_only=True)
class SessionPromptParams:
    session_id: str
    prompt: str | list[Any]


@dataclass(frozen=True, kw_only=True)
class SetModeParams:
    session_id: str
    mode: str | None = None
    permission_mode: str | None = None  # another name of mode, as in kiln/session/new
    edit_mode: str | None = None

    def permission(self) -> str | None:
        """The mode asked for, under either name; InvalidParams when the two differ."""
        given = {"mode": self.mode, "permissionMode": self.permission_mode}
        mode = typed_options(given, "params").get("mode")
        return mode if isinstance(mode, str) else None


@dataclass(frozen=True, kw_only=True)
class EditListParams:
    session_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class EditResolveParams:
    proposal_id: str
    decision: Literal["accept", "reject"]
    new_text: str | None = None  # per-hunk review: the file as the user kept it


MAX_SEARCH_LIMIT = 100


@dataclass(frozen=True, kw_only=True)
class SkillsSearchParams:
    query: str = ""
    limit: int = 20
    registry: str | None = None

    def __post_init__(self) -> None:
        # as the registry pages (1 to 100 a page); refused here, before any request is sent
        if type(self.limit) is not int or not 1 <= self.limit <= MAX_SEARCH_LIMIT:
            raise InvalidParams(f"param 'limit' must be an integer from 1 to {MAX_SEARCH_LIMIT}")


@dataclass(frozen=True, kw_only=True)
class SkillsInstallParams:
    spec: str
    scope: Literal["project", "user"] = "project"
    registry: str | None = None
    yes: bool = False


@dataclass(frozen=True, kw_only=True)
class SkillsRemoveParams:
    id: str
    scope: Literal["project", "user"] = "project"
    force: bool = False


@dataclass(frozen=True, kw_only=True)
class CompleteParams:
    query: str = ""
    limit: int = 20


@dataclass(frozen=True, kw_only=True)
class SkillUseParams:
    name: str
