"""A session is listed by what the user asked, not by the markup of what they attached: a
question that starts with a skill (the panel's ``/pdf fill the form``) or a file reference is
titled by its words. Real ``kiln lsp``, the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.conftest import running

pytestmark = pytest.mark.e2e


async def test_a_session_is_titled_by_the_question_not_its_attachments(
    workspace: Path, scripted_env: object
) -> None:
    env = scripted_env(["Done.", "Done."])  # type: ignore[operator]
    async with running(workspace, env) as editor:
        skill = {
            "type": "resource",
            "resource": {"uri": "kiln-skill:pdf", "text": "# PDF\nFill forms."},
        }
        link = {"type": "resource_link", "uri": (workspace / "app.py").as_uri(), "name": "app.py"}
        asked = {}
        for blocks, question in (([skill], "fill the form"), ([link], "explain it")):
            sid = (await editor.request("kiln/session/new", {}))["sessionId"]
            prompt = [*blocks, {"type": "text", "text": question}]
            await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": prompt})
            asked[sid] = question
        listed = (await editor.request("kiln/session/list", {}))["sessions"]
        assert {s["sessionId"]: s["title"] for s in listed} == asked
