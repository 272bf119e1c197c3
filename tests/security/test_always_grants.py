"""An "allow always" answer covers what the question showed, never more than the user's own
rules allow: after the user allowed every `write_file` of the session on a harmless file, a
write to a file the user's `ask` rule names (`Edit(deploy/**)`) went through unasked, where a
command under an `ask` rule was asked again (docs/security.md section 3). Through the real
`kiln lsp` with an editor that answers "allow always" once and declines everything after."""

from __future__ import annotations

import json
from pathlib import Path

from tests.lsp.conftest import running, server_env
from tests.lsp.kiln_client import REJECT

ALWAYS = {"outcome": {"outcome": "selected", "optionId": "allow_always"}}


async def test_an_always_answer_does_not_skip_the_users_ask_rules(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = tmp_path / "ws"
    (root / "deploy").mkdir(parents=True)
    (root / "deploy" / "prod.env").write_text("TARGET=prod\n")
    rules = {"permissions": {"ask": ["Edit(deploy/**)"]}}
    (kiln_home / "settings.json").write_text(json.dumps(rules))
    steps = [
        {"tool_calls": [{"name": "write_file", "input": {"path": "notes.md", "content": "n\n"}}]},
        {"tool_calls": [{"name": "write_file",
                         "input": {"path": "deploy/prod.env", "content": "TARGET=evil\n"}}]},
        "done",
    ]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    env = server_env(kiln_home, KILN_PROVIDER="scripted", KILN_SCRIPT=str(script))
    async with running(root, env) as editor:
        answers = iter([ALWAYS])
        editor.on_permission = lambda params: next(answers, REJECT)
        session = await editor.request("kiln/session/new", {})
        await editor.request(
            "kiln/session/prompt", {"sessionId": session["sessionId"], "prompt": "go"}
        )
    assert (root / "notes.md").read_text() == "n\n"
    asked = [json.dumps(r["toolCall"]) for r in editor.permission_requests]
    assert len(asked) == 2 and "deploy/prod.env" in asked[1], asked
    assert (root / "deploy" / "prod.env").read_text() == "TARGET=prod\n"
