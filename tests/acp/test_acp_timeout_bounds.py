"""`permissionTimeout` (above 0, at most 86,400 s) and `mcpStartTimeout` (above 0, at most 600 s)
in `_meta.kiln` and the `KILN_ACP_*` variables (docs/acp.md).

They had no upper bound: `1e300` was taken as a timeout nothing reaches (a permission question
that is never withdrawn, an MCP server waited on for ever). A value out of range is now -32602
with one line naming the setting and its range; from the environment it is one line and
exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import KILN_ACP
from tests.acp.test_acp_lifecycle import frame

pytestmark = pytest.mark.e2e

PERMISSION = "permissionTimeout must be a positive number of seconds, at most 86,400, got"
MCP = "mcpStartTimeout must be a positive number of seconds, at most 600, got"


def _replies(lines: list[str], kiln_home: Path, script: Path) -> dict[Any, dict[str, Any]]:
    """`kiln acp` on the scripted model, fed ``lines``; its answers by id."""
    script.write_text('["Fine."]', encoding="utf-8")
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin", "KILN_PROVIDER": "scripted",
           "KILN_SCRIPT": str(script)}  # fmt: skip
    done = subprocess.run(
        KILN_ACP, input="\n".join(lines) + "\n", capture_output=True, text=True, env=env,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return {r["id"]: r for r in map(json.loads, done.stdout.splitlines()) if "id" in r}


def test_timeouts_out_of_range_in_meta_are_refused_naming_the_range(
    kiln_home: Path, workspace: Path, tmp_path: Path
) -> None:
    def new(n: int, **kiln: Any) -> str:
        params = {"cwd": str(workspace), "mcpServers": [], "_meta": {"kiln": kiln}}
        return frame(n, "session/new", params)

    raw = [
        frame(1, "initialize", {"protocolVersion": 1, "_meta": {"kiln": {"permissionTimeout": 1e300}}}),
        frame(2, "initialize", {"protocolVersion": 1}),
        new(3, permissionTimeout=1e300),
        new(4, permissionTimeout=86_401),
        new(5, mcpStartTimeout=1e300),
        new(6, mcpStartTimeout=601),
        new(7, mcpStartTimeout=0),
        new(8, permissionTimeout=86_400, mcpStartTimeout=600),
    ]  # fmt: skip
    replies = _replies(raw, kiln_home, tmp_path / "script.json")
    expected = {1: f"{PERMISSION} 1e+300", 3: f"{PERMISSION} 1e+300", 4: f"{PERMISSION} 86401",
                5: f"{MCP} 1e+300", 6: f"{MCP} 601", 7: f"{MCP} 0"}  # fmt: skip
    for n, message in expected.items():
        error = replies[n]["error"]
        assert (error["code"], error["message"]) == (-32602, message), error
    assert replies[2]["result"]["protocolVersion"] == 1
    assert replies[8]["result"]["sessionId"]  # the bounds themselves are taken


@pytest.mark.parametrize(
    ("name", "value", "line"),
    [
        ("KILN_ACP_PERMISSION_TIMEOUT", "1e300", f"{PERMISSION} '1e300'"),
        ("KILN_ACP_MCP_TIMEOUT", "3600", f"{MCP} '3600'"),
    ],
)
def test_timeouts_out_of_range_in_the_environment_are_one_line_and_exit_2(
    kiln_home: Path, name: str, value: str, line: str
) -> None:
    env = {"KILN_HOME": str(kiln_home), name: value}
    done = subprocess.run(
        KILN_ACP, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip().splitlines() == [f"kiln: bad {name}: {line}"]
