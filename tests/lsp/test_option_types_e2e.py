"""kiln lsp's options are typed as PROTOCOL.md §3 shows them, as `_meta.kiln` is in kiln acp:
numbers are JSON numbers (a boolean is none), names strings, `confirmEdits`/`index`/`hover`
booleans.

`initializationOptions` and pushed settings were read loosely: `"maxSteps": "30"` passed as 30,
`"confirmEdits": "false"` turned confirmation on, and a session's `"permissionTimeout": "60"`
passed as 60 s. Each is now refused with one line naming the field: `configError` for
`initializationOptions` (the server runs on its defaults), a warning for a pushed setting (the
previous settings stay), -32602 for a session's option."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import running, server_env
from tests.lsp.raw_client import RawServer
from tests.lsp.test_mode_e2e import settings
from tests.waiting import until

pytestmark = pytest.mark.e2e


async def test_ill_typed_options_are_refused_naming_the_field(
    workspace: Path, scripted_env: Any
) -> None:
    options = {"maxSteps": "30", "confirmEdits": "false"}
    async with running(workspace, scripted_env(["ok"]), options=options) as editor:
        hello = await editor.request("kiln/hello", {})
        assert hello["configError"] == "initializationOptions.maxSteps must be a number, got '30'"
        assert hello["config"]["permissionTimeout"] == 120  # the defaults, not the options sent

        for pushed, line in (
            ({"maxSteps": True}, "kiln.maxSteps must be a number, got true"),
            ({"model": 5}, "kiln.model must be a string, got 5"),
            ({"confirmEdits": "yes"}, "kiln.confirmEdits must be a boolean, got 'yes'"),
        ):
            editor.workspace_did_change_configuration(settings({"permissionTimeout": 30, **pushed}))
            shown = f"show: Kiln settings not applied: {line}"
            await until(lambda shown=shown: shown in editor.logs, what=shown)
        assert (await editor.request("kiln/hello", {}))["config"]["permissionTimeout"] == 120

        for bad in ({"permissionTimeout": "60"}, {"maxSteps": "30"}, {"maxSteps": True}):
            with pytest.raises(JsonRpcException) as err:
                await editor.request("kiln/session/new", bad)
            assert err.value.code == -32602, err.value
            assert f"param {next(iter(bad))!r} has the wrong type" in str(err.value)
        taken = await editor.request("kiln/session/new", {"permissionTimeout": 60, "maxSteps": 30})
        assert taken["sessionId"]


async def test_max_steps_takes_an_integral_float_and_refuses_a_fraction_as_kiln_acp_does(
    workspace: Path, scripted_env: Any
) -> None:
    """A JSON number such as `1.0` passes as an integer (PROTOCOL.md, -32602) and kiln acp's
    `_meta.kiln.maxSteps` took it, but `kiln/session/new` refused `maxSteps: 1.0` as "the wrong
    type". It is now a limit of one step; a fraction is the line kiln acp answers."""
    step = {"tool_calls": [{"name": "list_files", "input": {}}]}
    async with running(workspace, scripted_env([step, step, "Done."])) as editor:
        for fraction in (30.5, 0.5):
            with pytest.raises(JsonRpcException) as err:
                await editor.request("kiln/session/new", {"maxSteps": fraction})
            assert err.value.code == -32602, err.value
            assert err.value.message == f"maxSteps must be a whole number, got {fraction}"
        session = await editor.request("kiln/session/new", {"maxSteps": 1.0, "mode": "yolo"})
        result = await editor.request(
            "kiln/session/prompt",
            {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "go"}]},
        )
        assert result["stopReason"] == "max_steps", result  # one step, not fifty


async def test_an_integral_float_is_an_integer_in_every_kiln_method(
    workspace: Path, scripted_env: Any
) -> None:
    """PROTOCOL.md's -32602 row: an integral float such as `1.0` passes as an integer. Only
    `maxSteps` held it; `limit: 2.0` in `kiln/complete/mentions` or `kiln/skills/search` was
    "param 'limit' has the wrong type". A fraction is still refused, naming the field."""
    for name in ("alpha.py", "beta.py", "gamma.py"):
        (workspace / name).write_text("x = 1\n")
    async with running(workspace, scripted_env([])) as editor:
        found = await editor.request("kiln/complete/mentions", {"query": "a", "limit": 2.0})
        assert len(found["items"]) <= 2, found
        commands = await editor.request("kiln/complete/commands", {"query": "", "limit": 1.0})
        assert commands["commands"], commands
        for method, bad in (
            ("kiln/complete/mentions", {"query": "a", "limit": 2.5}),
            ("kiln/skills/search", {"query": "x", "limit": 20.5}),
            ("kiln/complete/mentions", {"query": "a", "limit": True}),
        ):
            with pytest.raises(JsonRpcException) as err:
                await editor.request(method, bad)
            assert err.value.code == -32602 and "param 'limit' has the wrong type" in str(
                err.value
            ), err.value


async def test_mode_and_permission_mode_that_differ_are_refused_as_kiln_acp_refuses_them(
    workspace: Path, scripted_env: Any
) -> None:
    """`permissionMode` is another name of `mode`. Sent both with different values, kiln lsp let
    `permissionMode` win (`initializationOptions` `{"mode": "ask", "permissionMode": "yolo"}`
    ran in yolo) where kiln acp refuses the pair; now neither wins anywhere: `configError`
    for `initializationOptions`, a warning for a pushed setting, -32602 for a session."""
    options = {"mode": "ask", "permissionMode": "yolo"}
    async with running(workspace, scripted_env(["ok"]), options=options) as editor:
        hello = await editor.request("kiln/hello", {})
        assert hello["configError"] == (
            "initializationOptions.mode 'ask' and initializationOptions.permissionMode 'yolo'"
            " differ: they are one option, send one of them"
        )
        assert hello["config"]["mode"] == "ask"  # the default: neither of the two

        editor.workspace_did_change_configuration(
            settings({"mode": "ci", "permissionMode": "yolo"})
        )
        shown = "show: Kiln settings not applied: kiln.mode 'ci' and kiln.permissionMode 'yolo'"
        await until(lambda: any(line.startswith(shown) for line in editor.logs), what=shown)
        assert (await editor.request("kiln/hello", {}))["config"]["mode"] == "ask"

        with pytest.raises(JsonRpcException) as err:
            await editor.request("kiln/session/new", {"mode": "ask", "permissionMode": "yolo"})
        assert err.value.code == -32602, err.value
        assert err.value.message == (
            "params.mode 'ask' and params.permissionMode 'yolo' differ: they are one option,"
            " send one of them"
        )
        alias = await editor.request("kiln/session/new", {"permissionMode": "auto-edit"})
        assert alias["mode"] == "auto-edit"  # alone, it is the mode
        same = await editor.request("kiln/session/new", {"mode": "yolo", "permissionMode": "yolo"})
        assert same["mode"] == "yolo"
        listed = await editor.request("kiln/session/list", {})
        assert len(listed["sessions"]) == 2  # the refused request made no session

        sid = alias["sessionId"]  # kiln/session/setMode takes either name too
        with pytest.raises(JsonRpcException) as err:
            await editor.request(
                "kiln/session/setMode", {"sessionId": sid, "mode": "ci", "permissionMode": "yolo"}
            )
        assert err.value.code == -32602 and "differ" in err.value.message, err.value
        changed = await editor.request(
            "kiln/session/setMode", {"sessionId": sid, "permissionMode": "ci"}
        )
        assert changed["mode"] == "ci"  # it was ignored: the mode stayed auto-edit


async def test_an_unknown_provider_is_refused_where_it_is_sent(
    workspace: Path, scripted_env: Any
) -> None:
    """kiln acp refuses an unknown `provider` at the request (-32602); kiln lsp took it and
    failed only at the first model call, as an `error` update. It is now refused where it is
    sent, naming the providers, and no session is made."""
    known = "anthropic, azure, local, openai, scripted"
    options = {"provider": "opnai"}
    async with running(workspace, scripted_env(["ok"]), options=options) as editor:
        hello = await editor.request("kiln/hello", {})
        assert hello["configError"] == (
            f"initializationOptions.provider must be one of {known}, got 'opnai'"
        )
        assert hello["config"]["provider"] is None
        for method, params in (
            ("kiln/session/new", {"provider": "opnai"}),
            ("kiln/session/load", {"sessionId": "20261130-051200-1a2b3c4d", "provider": "x"}),
        ):
            with pytest.raises(JsonRpcException) as err:
                await editor.request(method, params)
            assert err.value.code == -32602, err.value
            assert err.value.message.startswith(f"params.provider must be one of {known}, got")
        assert (await editor.request("kiln/session/list", {}))["sessions"] == []
        editor.workspace_did_change_configuration(settings({"provider": "nope"}))
        shown = f"show: Kiln settings not applied: kiln.provider must be one of {known}, got"
        await until(lambda: any(line.startswith(shown) for line in editor.logs), what=shown)


@pytest.mark.parametrize(
    ("options", "line"),
    [
        ("yolo", "initializationOptions must be an object, got 'yolo'"),
        (5, "initializationOptions must be an object, got 5"),
        (False, "initializationOptions must be an object, got false"),
        ([], None),  # Neovim's empty table: no options
    ],
)
async def test_initialization_options_that_are_no_object_are_refused_not_ignored(
    workspace: Path, kiln_home: Path, options: Any, line: str | None
) -> None:
    """`initializationOptions` of another JSON type than an object were dropped without a word
    (the server ran on its defaults and `configError` was absent), where kiln acp answers
    `_meta.kiln: "yolo"` with `_meta.kiln must be an object`. `configError` now says so."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, initializationOptions=options)
        hello = (await server.request("hello", "kiln/hello", {}))["result"]
        assert hello.get("configError") == line, hello
        assert hello["config"]["mode"] == "ask"
        assert await server.shutdown_and_exit() == 0
    finally:
        await server.close()
