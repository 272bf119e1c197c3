"""A prompt's `resource_link` whose URI names a line range in its fragment, as editors link a
selection (Zed: `file.py#L2:3`; GitHub style: `#L2-L3`), attaches only those lines, as other ACP
agents do; the range was ignored and the whole file reached the model (docs/acp.md,
`session/prompt`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e

ONLY_LINES_2_3 = (
    r're:(?s)^(?!.*line one)(?!.*line four).*lines="2-3">\n<external_content source="file:lines.py">'
    r"\nline two\nline three\n"
)


@pytest.mark.parametrize("fs", [True, False], ids=["through-the-client", "from-the-disk"])
@pytest.mark.parametrize("fragment", ["#L2:3", "#L2-L3", "#L2C4-L3C1"])
async def test_a_linked_line_range_attaches_only_those_lines(
    spawn, workspace: Path, fragment: str, fs: bool
) -> None:
    (workspace / "lines.py").write_text("line one\nline two\nline three\nline four\n")
    client = EditorClient()
    script = [{"match": ONLY_LINES_2_3, "text": "saw lines 2-3"}, "saw something else"]
    uri = (workspace / "lines.py").as_uri() + fragment
    prompt = [{"type": "text", "text": "look"}, {"type": "resource_link", "uri": uri, "name": "x"}]
    async with spawn(script, client) as agent:
        await agent.start(fs=fs)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        assert (await agent.conn.prompt(session_id=sid, prompt=prompt)).stop_reason == "end_turn"
    assert client.text() == "saw lines 2-3"


async def test_a_range_from_line_zero_is_one_clear_error(spawn, workspace: Path) -> None:
    client = EditorClient()
    uri = (workspace / "app.py").as_uri() + "#L0:1"
    async with spawn(["unused"], client) as agent:
        await agent.start(fs=False)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        with pytest.raises(RequestError) as refused:
            await agent.conn.prompt(
                session_id=sid, prompt=[{"type": "resource_link", "uri": uri, "name": "app.py"}]
            )
    assert refused.value.code == -32602 and "1-based" in str(refused.value)


async def test_an_embedded_selection_is_its_own_text(spawn, workspace: Path) -> None:
    """Zed embeds a selection as a `resource` whose URI names its lines and whose text is the
    selection itself: that text reaches the model whole, not cut again by the range."""
    client = EditorClient()
    script = [{"match": "re:two\nthree", "text": "saw the selection"}, "cut it short"]
    uri = (workspace / "app.py").as_uri() + "#L2:3"
    resource = {"uri": uri, "text": "two\nthree"}
    prompt = [{"type": "text", "text": "see"}, {"type": "resource", "resource": resource}]
    async with spawn(script, client) as agent:
        await agent.start(fs=True)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        assert (await agent.conn.prompt(session_id=sid, prompt=prompt)).stop_reason == "end_turn"
    assert client.text() == "saw the selection"
