"""Pure pieces of the LSP host: positions in every encoding, ACP-shaped updates, prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import schema
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec
from pygls.workspace.text_document import TextDocument

from agent import events as ev
from agent.protocols import EditProposal, PermissionRequest
from lsp_server.core import (
    CoreConfig,
    InvalidParams,
    decision_from_answer,
    event_to_update,
    history_updates,
    permission_tool_call,
    prompt_to_blocks,
)
from lsp_server.lsp.edits import minimal_replacement, workspace_edit

TEXT = st.lists(
    st.sampled_from(["a", "b", " ", "\n", "\r\n", "é", "中", "😀", "\t"]), max_size=12
).map("".join)


@settings(max_examples=300, deadline=None)
@given(old=TEXT, new=TEXT, encoding=st.sampled_from(["utf-8", "utf-16", "utf-32"]))
def test_replacement_applied_by_pygls_gives_the_new_text(old: str, new: str, encoding: str) -> None:
    """pygls's own document model is the oracle: an editor applying our range gets ``new``."""
    rep = minimal_replacement(old, new, encoding)
    doc = TextDocument("file:///x.txt", old, 1, position_codec=PositionCodec(encoding))
    doc.apply_change(
        types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(**rep.start), end=types.Position(**rep.end)),
            text=rep.new_text,
        )
    )
    assert doc.source == new


def test_replacement_is_trimmed_and_counts_code_units() -> None:
    rep = minimal_replacement("x = '😀'; y\n", "x = '😀'; z\n", "utf-16")
    assert rep.start == {"line": 0, "character": 10} and rep.new_text == "z"
    assert minimal_replacement("x = '😀'; y\n", "x = '😀'; z\n", "utf-8").start["character"] == 12
    assert minimal_replacement("x = '😀'; y\n", "x = '😀'; z\n", "utf-32").start["character"] == 9


def test_workspace_edit_shapes() -> None:
    uri = "file:///w/a.py"
    plain = workspace_edit(uri, "a\n", "b\n", encoding="utf-16", version=3, exists=True,
                           document_changes=False, create_supported=False)  # fmt: skip
    assert plain == {
        "changes": {
            uri: [
                {
                    "range": {
                        "start": {"line": 0, "character": 0},
                        "end": {"line": 0, "character": 1},
                    },
                    "newText": "b",
                }
            ]
        }
    }
    created = workspace_edit(uri, "", "b\n", encoding="utf-16", version=None, exists=False,
                             document_changes=True, create_supported=True)  # fmt: skip
    assert created is not None and created["documentChanges"][0]["kind"] == "create"
    assert workspace_edit(uri, "", "b", encoding="utf-16", version=None, exists=False,
                          document_changes=True, create_supported=False) is None  # fmt: skip


ROOT = Path("/w")


@pytest.mark.parametrize(
    ("event", "model"),
    [
        (ev.TextChunk(text="hi"), schema.AgentMessageChunk),
        (
            ev.ToolCallStarted(
                id="t1",
                name="read_file",
                title="read_file: a.py",
                tool_kind="read",
                arguments={"path": "a.py"},
                locations=[{"path": "a.py", "line": 3}],
            ),
            schema.ToolCallStart,
        ),
        (
            ev.ToolCallFinished(
                id="t1",
                name="read_file",
                status="failed",
                output="boom",
                is_error=True,
                duration_ms=4,
            ),
            schema.ToolCallProgress,
        ),
        (
            ev.EditProposed(id="t2", proposal_id="p1", path="a.py", old_text="a", new_text="b"),
            schema.ToolCallProgress,
        ),
        (
            ev.PlanUpdated(entries=[{"id": "1", "content": "x", "status": "completed"}]),
            schema.AgentPlanUpdate,
        ),
        (
            ev.UsageReported(
                input_tokens=5,
                cache_read_tokens=7,
                cache_write_tokens=1,
                output_tokens=2,
                cost_usd=0.5,
                step=1,
            ),
            schema.UsageUpdate,
        ),
    ],
)
def test_updates_validate_against_the_acp_schema(event: ev.AgentEvent, model: type) -> None:
    update = event_to_update(event, root=ROOT, context_window=1000)
    assert update is not None
    parsed = model.model_validate(update)
    assert parsed.session_update == update["sessionUpdate"]


def test_usage_keeps_cache_tokens_and_edit_keeps_proposal() -> None:
    usage = event_to_update(ev.UsageReported(input_tokens=5, cache_read_tokens=7,
                                             cache_write_tokens=1, output_tokens=2),
                            root=ROOT, context_window=100)  # fmt: skip
    assert usage is not None and usage["used"] == 15 and usage["_meta"]["cacheReadTokens"] == 7
    edit = event_to_update(ev.EditProposed(id="t", proposal_id="p9", path="d/a.py",
                                           old_text="", new_text="x"), root=ROOT)  # fmt: skip
    assert edit is not None and edit["content"][0]["path"] == "/w/d/a.py"
    assert edit["_meta"]["proposalId"] == "p9"
    assert event_to_update(ev.TurnDone(stop_reason="end_turn"), root=ROOT) is None


def test_permission_request_and_answers() -> None:
    proposal = EditProposal("a.py", "a", "b", proposal_id="p1", call_id="t1")
    call = permission_tool_call(
        PermissionRequest(
            "edit_file", "edit_file: a.py", {"path": "a.py"}, call_id="t1", edit=proposal
        ),
        root=ROOT,
    )
    schema.ToolCallUpdate.model_validate(call)
    assert call["kind"] == "edit" and call["content"][0]["newText"] == "b"
    assert (
        decision_from_answer({"outcome": {"outcome": "selected", "optionId": "allow_always"}})
        == "allow_always"
    )
    assert decision_from_answer({"outcome": {"outcome": "cancelled"}}) == "reject_once"
    assert decision_from_answer("allow_once") == "allow_once"
    assert decision_from_answer({"optionId": "bogus"}) == "reject_once"
    assert decision_from_answer(None) == "reject_once"


def test_prompt_blocks_and_config_errors(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("l0\nl1\nl2\n")
    blocks = prompt_to_blocks(
        [{"type": "resource_link", "uri": (tmp_path / "f.py").as_uri(),
          "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}}],
        root=tmp_path, read_text=lambda p: p.read_text(),
    )  # fmt: skip
    assert blocks[0]["text"] == (  # the file's text is data, wrapped as read_file wraps it
        '<reference path="f.py" lines="2-3">\n<external_content source="file:f.py">\nl1\nl2\n'
        "</external_content>\n</reference>"
    )
    upwards = {"start": {"line": 2, "character": 0}, "end": {"line": 1, "character": 0}}
    link = {"type": "resource_link", "uri": (tmp_path / "f.py").as_uri(), "range": upwards}
    assert prompt_to_blocks([link], root=tmp_path, read_text=lambda p: p.read_text()) == blocks
    with pytest.raises(InvalidParams):
        prompt_to_blocks([], root=tmp_path, read_text=lambda p: None)
    # An ill-typed range is invalid params (PROTOCOL.md §7), not ignored or sliced from the end.
    for span in ["1-3", {"start": {"line": -2}, "end": {"line": 1}}]:
        link = {"type": "resource_link", "uri": (tmp_path / "f.py").as_uri(), "range": span}
        with pytest.raises(InvalidParams):
            prompt_to_blocks([link], root=tmp_path, read_text=lambda p: p.read_text())
    with pytest.raises(InvalidParams):
        CoreConfig.from_options({"editMode": "sometimes"})
    assert (
        CoreConfig.from_options(
            {"permissionMode": "yolo", "permissionTimeout": "3"}
        ).permission_timeout
        == 3.0
    )


def test_history_replay_skips_harness_blocks() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "<environment>x</environment>"},
                                     {"type": "text", "text": "fix it"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"},
                                          {"type": "tool_use", "id": "t", "name": "grep", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]},
    ]  # fmt: skip
    kinds = [u["sessionUpdate"] for u in history_updates(messages, root=ROOT)]
    assert kinds == ["user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update"]


def test_references_to_untitled_buffers_and_odd_names(tmp_path: Path) -> None:
    blocks = prompt_to_blocks(
        [{"type": "resource_link", "uri": "untitled:Untitled-1"},
         {"type": "resource_link", "uri": "untitled:gone"}],
        root=tmp_path, read_text=lambda p: None,
        read_uri=lambda uri: "scratch text" if uri == "untitled:Untitled-1" else None,
    )  # fmt: skip
    assert blocks[0]["text"] == (
        '<reference uri="untitled:Untitled-1">\n<external_content source="untitled:Untitled-1">\n'
        "scratch text\n</external_content>\n</reference>"
    )
    assert blocks[1]["text"] == '<reference uri="untitled:gone"/>'
    odd = tmp_path / 'a"b.py'
    odd.write_text("x")
    block = prompt_to_blocks([{"type": "resource_link", "uri": odd.as_uri()}], root=tmp_path,
                             read_text=lambda p: p.read_text())[0]  # fmt: skip
    assert block["text"].startswith('<reference path="a&quot;b.py">')


def test_kiln_only_updates_are_named_and_carry_their_fields() -> None:
    compaction = dict(epoch=1, tier=3, reason="auto", before_tokens=900, after_tokens=300,
                      removed_messages=4, kept_messages=3, source="model", archive="/a.txt")  # fmt: skip
    cases: list[tuple[ev.AgentEvent, dict[str, Any]]] = [
        (ev.StatusNote(text="step limit reached (50)"), {"text": "step limit reached (50)"}),
        (ev.Refused(id="t", tool="run_command", reason="no"), {"toolCallId": "t", "tool": "run_command", "reason": "no"}),
        (ev.MemoryProposed(text="use uv", from_external=True, turn=2), {"text": "use uv", "fromExternal": True, "turn": 2}),
        (ev.ErrorReported(message="boom", hint="retry"), {"message": "boom", "hint": "retry"}),
        (ev.Compacted(**compaction), {**compaction, "summary_tokens": 0}),
    ]  # fmt: skip
    for event, expected in cases:
        update = event_to_update(event, root=ROOT)
        assert update == {"sessionUpdate": event.kind, **expected}
    assert event_to_update(ev.PermissionAsked(id="t", tool="run_command"), root=ROOT) is None


def test_the_fresh_index_check_does_not_wait_on_a_fifo(tmp_path: Path) -> None:
    """After an applied edit, the fresh index asks whether the disk holds the edit's text
    (``_holds``). A command that swapped the file for a FIFO meanwhile made that read wait for
    a writer forever, on the server's thread; the file is now read as the file tools read it."""
    import os
    import threading
    from types import SimpleNamespace

    from pygls.workspace import Workspace

    from lsp_server.lsp.features import _holds

    plain, fifo = tmp_path / "plain.py", tmp_path / "swapped.py"
    plain.write_text("x = 1\n")
    os.mkfifo(fifo)
    ls: Any = SimpleNamespace(workspace=Workspace(tmp_path.as_uri()))
    answers: list[bool] = []
    reader = threading.Thread(
        target=lambda: answers.extend([_holds(ls, plain, "x = 1\n"), _holds(ls, fifo, "x")]),
        daemon=True,
    )
    reader.start()
    reader.join(60)
    if reader.is_alive():  # release the blocked read so the process can end
        with open(fifo, "w"):
            pass
    assert answers == [True, False]
