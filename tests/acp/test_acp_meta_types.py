"""`_meta.kiln` options are typed as docs/acp.md shows them: numbers are JSON numbers (a boolean
is none), names are strings, `_meta.kiln` itself an object.

They were read loosely: `"maxSteps": "30"` passed as 30, `"permissionTimeout": "60"` as 60 s and
`true` as one second, `"model": 5` reached the provider as a model name. Each is now -32602 with
one line naming the field, and nothing is configured by it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.acp.conftest import KILN_ACP, EditorClient
from tests.acp.test_acp_lifecycle import frame

pytestmark = pytest.mark.e2e

REFUSED: list[tuple[Any, str]] = [
    ({"maxSteps": "30"}, "_meta.kiln.maxSteps must be a number, got '30'"),
    ({"maxSteps": True}, "_meta.kiln.maxSteps must be a number, got true"),
    ({"permissionTimeout": "60"}, "_meta.kiln.permissionTimeout must be a number, got '60'"),
    ({"mcpStartTimeout": False}, "_meta.kiln.mcpStartTimeout must be a number, got false"),
    ({"mode": 1}, "_meta.kiln.mode must be a string, got 1"),
    ({"permissionMode": True}, "_meta.kiln.permissionMode must be a string, got true"),
    ({"editMode": ["ask"]}, "_meta.kiln.editMode must be a string, got an array"),
    ({"provider": {"name": "openai"}}, "_meta.kiln.provider must be a string, got an object"),
    ({"model": 5}, "_meta.kiln.model must be a string, got 5"),
    ("yolo", "_meta.kiln must be an object, got 'yolo'"),
]


def test_ill_typed_meta_kiln_options_are_refused_naming_the_field(
    kiln_home: Path, workspace: Path, tmp_path: Path
) -> None:
    def new(n: int, kiln: Any) -> str:
        params = {"cwd": str(workspace), "mcpServers": [], "_meta": {"kiln": kiln}}
        return frame(n, "session/new", params)

    raw = [
        frame(1, "initialize", {"protocolVersion": 1, "_meta": {"kiln": {"maxSteps": "30"}}}),
        frame(2, "initialize", {"protocolVersion": 1, "_meta": {"kiln": {"maxSteps": 30}}}),
        *(new(n, kiln) for n, (kiln, _) in enumerate(REFUSED, start=10)),
        new(3, {"maxSteps": 30, "permissionTimeout": 60.5, "mode": "yolo", "model": None}),
    ]
    script = tmp_path / "script.json"
    script.write_text('["Fine."]', encoding="utf-8")
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin", "KILN_PROVIDER": "scripted",
           "KILN_SCRIPT": str(script)}  # fmt: skip
    done = subprocess.run(
        KILN_ACP, input="\n".join(raw) + "\n", capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines()) if "id" in r}
    first = replies[1]["error"]
    assert (first["code"], first["message"]) == (
        -32602,
        "_meta.kiln.maxSteps must be a number, got '30'",
    )
    assert replies[2]["result"]["protocolVersion"] == 1  # the corrected initialize is taken
    for n, (_, line) in enumerate(REFUSED, start=10):
        error = replies[n]["error"]
        assert (error["code"], error["message"]) == (-32602, line), error
    taken = replies[3]["result"]
    assert taken["modes"]["currentModeId"] == "yolo"


async def test_max_steps_takes_an_integral_float_and_refuses_a_fraction_as_kiln_lsp_does(
    spawn: Any, workspace: Path
) -> None:
    """`_meta.kiln.maxSteps: 1.0` is a limit of one step and `30.5` the one line kiln lsp's
    `kiln/session/new` answers too (tests/lsp/test_option_types_e2e.py)."""
    step = {"tool_calls": [{"name": "list_files", "input": {}}]}
    async with spawn([step, step, "Done."], EditorClient()) as agent:
        await agent.start()
        for fraction in (30.5, 0.5):
            with pytest.raises(RequestError) as err:
                await agent.conn.new_session(cwd=str(workspace), kiln={"maxSteps": fraction})
            assert err.value.code == -32602, err.value
            assert str(err.value) == f"maxSteps must be a whole number, got {fraction}"
        kiln = {"maxSteps": 1.0, "mode": "yolo"}
        sid = (await agent.conn.new_session(cwd=str(workspace), kiln=kiln)).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
        assert result.stop_reason == "max_turn_requests"  # one step, not fifty


KNOWN = "anthropic, azure, local, openai, scripted"


def test_an_unknown_provider_is_the_clients_bad_parameter_where_it_is_sent(
    kiln_home: Path, workspace: Path, tmp_path: Path
) -> None:
    """`_meta.kiln.provider` naming no provider was taken by `initialize` and surfaced only at
    `session/new`, as -32603 (internal error): it is -32602 at once, naming the known ones."""
    new = {"cwd": str(workspace), "mcpServers": [], "_meta": {"kiln": {"provider": "opnai"}}}
    raw = [
        frame(1, "initialize", {"protocolVersion": 1, "_meta": {"kiln": {"provider": "nope"}}}),
        frame(2, "initialize", {"protocolVersion": 1}),
        frame(3, "session/new", new),
    ]
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin", "KILN_PROVIDER": "scripted"}
    done = subprocess.run(
        KILN_ACP, input="\n".join(raw) + "\n", capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines()) if "id" in r}
    for n, name in ((1, "nope"), (3, "opnai")):
        error = replies[n].get("error", {})
        line = f"_meta.kiln.provider must be one of {KNOWN}, got '{name}'"
        assert (error.get("code"), error.get("message")) == (-32602, line), replies[n]
    assert replies[2]["result"]["protocolVersion"] == 1  # the refused one was no handshake


async def test_mode_and_permission_mode_that_differ_are_refused_naming_both(
    spawn: Any, workspace: Path
) -> None:
    """`mode` and its alias `permissionMode` both sent: `permissionMode` won silently, so a
    client asking for `ask` in one could get `yolo` from the other. Differing, they are -32602
    naming both (nothing is created); the same mode twice is fine."""
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start()
        with pytest.raises(RequestError) as err:
            kiln = {"mode": "ask", "permissionMode": "yolo"}
            await agent.conn.new_session(cwd=str(workspace), kiln=kiln)
        assert err.value.code == -32602, err.value
        assert str(err.value) == (
            "_meta.kiln.mode 'ask' and _meta.kiln.permissionMode 'yolo' differ: "
            "they are one option, send one of them"
        )
        assert (await agent.conn.list_sessions()).sessions == []
        kiln = {"mode": "auto-edit", "permissionMode": "auto-edit"}
        same = await agent.conn.new_session(cwd=str(workspace), kiln=kiln)
        assert same.modes is not None and same.modes.current_mode_id == "auto-edit"
