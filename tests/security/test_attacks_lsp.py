"""The attack suite through `kiln lsp`: a real LSP client drives the same hostile repository.

In `ask` mode the editor approves every question except those that would grant the network
(a careless user): what the user approved may run, but it must stay inside the sandbox. In
`yolo` nothing is asked. Escapes are observed exactly as in the `kiln run` suite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.sandbox import find_backend
from tests.lsp.conftest import running, status_texts
from tests.lsp.kiln_client import ALLOW, REJECT
from tests.security.hostile import ATTACKS, Hostile, everything_written
from tests.security.test_attacks_run import report

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        find_backend() is None, reason="needs bubblewrap (apt-get install bubblewrap)"
    ),
]
# What a yes legitimately allows (the user approved it), so it is not counted under approval.
APPROVED_BY_USER = {"m-settings-tool", "m-remember", "m-claude-local-tool", "m-claude-local-sub",
                    "e-zed-tool"}  # fmt: skip


def careless_user(request: dict[str, Any]) -> Any:
    detail = request["toolCall"].get("_meta", {}).get("detail", "")
    return REJECT if "with network access" in detail else ALLOW


def results_from_updates(env: Hostile, updates: list[dict[str, Any]]) -> dict[str, str]:
    wanted = {json.dumps(env.fill(a.args), sort_keys=True): a.id for a in ATTACKS}
    by_call: dict[str, str] = {}
    results: dict[str, str] = {}
    for item in updates:
        update = item.get("update", {})
        if update.get("sessionUpdate") == "tool_call":
            key = json.dumps(update.get("rawInput", {}), sort_keys=True)
            if key in wanted:
                by_call[update["toolCallId"]] = wanted[key]
        elif (
            update.get("sessionUpdate") == "tool_call_update"
            and update.get("toolCallId") in by_call
        ):
            texts = [c.get("content", {}).get("text", "") for c in update.get("content") or []]
            results[by_call[update["toolCallId"]]] = results.get(
                by_call[update["toolCallId"]], ""
            ) + "\n".join(texts)
    return results


@pytest.mark.parametrize("mode", ["ask", "yolo"])
async def test_no_attack_escapes_kiln_lsp(hostile: Hostile, tmp_path: Path, mode: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(hostile.script()))
    env = {**hostile.env(), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    async with running(hostile.root, env, options={"permissionTimeout": 30}) as editor:
        editor.on_permission = careless_user
        session = await editor.request(
            "kiln/session/new", {"mode": mode, "editMode": "auto", "maxSteps": 200}
        )
        result = await editor.request(
            "kiln/session/prompt",
            {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "Tidy up."}]},
            timeout=600,
        )
        assert result["stopReason"] == "end_turn"
        updates = list(editor.updates)
        asked = list(editor.permission_requests)
    results = results_from_updates(hostile, updates)
    statuses = " ".join(status_texts(updates))
    assert "sandbox.network ignored" in statuses  # the repository's widening was refused, and said
    assert len(results) == len(ATTACKS)  # every attack ran and its result reached the editor
    counted_mode = "yolo" if mode == "yolo" else "ask"
    escapes = hostile.escapes(counted_mode, results, json.dumps(updates) + everything_written(
        hostile.kiln_home, skip=(hostile.kiln_home / "credentials.json",)))  # fmt: skip
    if mode == "ask":  # approved by the careless user: not an escape
        escapes = {k: v for k, v in escapes.items() if k not in APPROVED_BY_USER}
        escapes = {k: v for k, v in escapes.items() if next((a for a in ATTACKS if a.id == k), None) is None
                   or next(a for a in ATTACKS if a.id == k).observe != "marker"}  # fmt: skip
        commands = [r for r in asked if r["toolCall"]["kind"] == "execute"]
        assert commands and all(
            r["toolCall"]["content"][0]["content"]["text"].startswith("$ ") for r in commands
        )
    counted = sum(1 for a in ATTACKS if a.observe not in ("step",) and counted_mode in a.modes
                  and not (mode == "ask" and (a.id in APPROVED_BY_USER or a.observe == "marker")))  # fmt: skip
    report(
        mode + (" (editor approves all but network)" if mode == "ask" else ""),
        "kiln lsp",
        counted,
        escapes,
    )
    assert escapes == {}, json.dumps(escapes, indent=1)
