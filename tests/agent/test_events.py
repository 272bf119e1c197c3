"""Every event kind is handled by every renderer: a kind a renderer forgets fails here.

The renderers end their ``match`` with ``assert_never``; this test builds one instance of each
event class (found by walking ``Event``'s subclasses, so a class missing from ``AgentEvent``
fails too) and runs it through the LSP/ACP update mapping, the ACP transport's renderer and
the ``kiln run`` text and stream-json renderers.
"""

from __future__ import annotations

import dataclasses
import io
import json
import typing
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from acp.schema import SessionNotification

from agent import events
from agent.events import Event, event_classes
from lsp_server.acp.frontend import render_event
from lsp_server.core.updates import event_to_update
from lsp_server.headless.render import StreamJsonRenderer, TextRenderer

ROOT = Path("/w")
SAMPLES: dict[Any, Any] = {
    str: "[/a-z] text",
    int: 3,
    float: 0.25,
    bool: True,
    Any: {"path": "a.py"},
    list[dict[str, Any]]: [{"id": "1", "path": "a.py", "content": "x", "status": "pending"}],
}


def all_subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *all_subclasses(sub)}
    return found


def sample(cls: type[Event]) -> Any:
    hints = typing.get_type_hints(cls)
    values = {
        f.name: SAMPLES[hints[f.name]]
        for f in dataclasses.fields(cls)
        if f.init and f.name != "session_id"
    }
    return cls(**values, session_id="s1")


KINDS = sorted(
    (c for c in all_subclasses(Event) if c.__module__ == events.__name__), key=lambda c: c.kind
)


def test_every_event_class_is_in_the_union_with_a_unique_kind() -> None:
    assert set(KINDS) == set(event_classes())
    kinds = [c.kind for c in KINDS]
    assert all(kinds) and len(set(kinds)) == len(kinds)


@pytest.mark.parametrize("cls", KINDS, ids=lambda c: c.kind)
def test_every_renderer_handles_every_event(cls: type[Event]) -> None:
    event = sample(cls)
    update = event_to_update(event, root=ROOT, context_window=1000)
    assert update is None or update["sessionUpdate"]
    acp = render_event(event, root=ROOT, context_window=1000)
    if acp is not None:  # what the ACP transport sends must be valid ACP v1
        SessionNotification.model_validate({"sessionId": "s1", "update": acp})
    TextRenderer().line(event)
    out = io.StringIO()
    with redirect_stdout(out):
        StreamJsonRenderer()(event)
    assert json.loads(out.getvalue())["type"] == cls.kind


def test_a_kind_no_renderer_knows_fails() -> None:
    @dataclasses.dataclass
    class Unknown(Event):
        kind: typing.ClassVar[str] = "unknown"

    stray: Any = Unknown()
    with pytest.raises(AssertionError):
        event_to_update(stray, root=ROOT)
    with pytest.raises(AssertionError):
        render_event(stray, root=ROOT)
    with pytest.raises(AssertionError):
        TextRenderer().line(stray)
