"""`permissionTimeout` takes a number of seconds above 0 and at most 86,400 (PROTOCOL.md §3).

It had no upper bound: `1e300` was taken as a timeout no question ever reaches, and `true` as
one second. Out of range or not a number, it is now refused with one line naming the setting and
its range: -32602 for a session's option, `configError` for `initializationOptions` (the server
runs on its defaults), a warning for a pushed setting (the previous settings stay)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import running
from tests.lsp.test_mode_e2e import settings
from tests.waiting import until

pytestmark = pytest.mark.e2e

RANGE = "permissionTimeout must be a positive number of seconds, at most 86,400"


async def test_a_permission_timeout_out_of_range_is_refused_naming_the_range(
    workspace: Path, scripted_env: Any
) -> None:
    env = scripted_env(["ok"])
    async with running(workspace, env, options={"permissionTimeout": 1e300}) as editor:
        hello = await editor.request("kiln/hello", {})
        assert hello["configError"] == f"{RANGE}, got 1e+300", hello
        assert hello["config"]["permissionTimeout"] == 120  # the default, not 1e300

        for bad, shown in ((1e300, "1e+300"), (86_401, "86401"), (0, "0")):
            with pytest.raises(JsonRpcException) as err:
                await editor.request("kiln/session/new", {"permissionTimeout": bad})
            assert err.value.code == -32602, err.value
            assert f"{RANGE}, got {shown}" in str(err.value), err.value
        with pytest.raises(JsonRpcException) as err:
            await editor.request("kiln/session/new", {"permissionTimeout": True})
        assert err.value.code == -32602 and "permissionTimeout" in str(err.value)
        taken = await editor.request("kiln/session/new", {"permissionTimeout": 86_400})
        assert taken["sessionId"]

        editor.workspace_did_change_configuration(settings({"permissionTimeout": 1e300}))
        shown = f"show: Kiln settings not applied: {RANGE}, got 1e+300"
        await until(lambda: any(line.startswith(shown) for line in editor.logs), what=shown)
        assert (await editor.request("kiln/hello", {}))["config"]["permissionTimeout"] == 120
