"""Run one scenario of the ACP SDK conformance client (``tests/acp/sdk_client``) against `kiln acp`.

The model is the scripted wire server (real Anthropic SDK inside Kiln, real HTTP on 127.0.0.1);
the client is the official TypeScript SDK in a Node process that starts `kiln acp` itself, records
every frame both ways and checks it against the protocol's JSON schema. A report whose schema
check found anything fails the test that asked for it, with the offending frames.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer
from tests.npm import holding, npm_ci

SDK_CLIENT = Path(__file__).resolve().parent / "sdk_client"
REPO = SDK_CLIENT.parents[2]
KILN_ACP = [sys.executable, "-m", "lsp_server", "acp"]
# Seconds for a whole scenario (run.mjs stops it and reports where it was); each wait inside it
# is bounded at 60 s (editor.mjs). A loaded 2-core machine took 75 s for `load`'s two agents.
SCENARIO_TIMEOUT = 180
NODE_TIMEOUT = SCENARIO_TIMEOUT + 60  # and closing the agents after it
# The workspace's app.py as the `workspace` fixture writes it (tests/acp/conftest.py).
APP = "def greet():\n    return 'hello'\n"


def node_for_sdk_client() -> str:
    """The `node` binary with the client's npm packages installed, or skip with the reason."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the ACP SDK conformance suite needs Node 20+")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    major = int(version.stdout.strip().lstrip("v").split(".")[0])
    if major < 20:
        pytest.skip(f"node {version.stdout.strip()} is too old: the ACP SDK needs Node 20+")
    installed = SDK_CLIENT / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
    with holding(SDK_CLIENT):  # another worker may be installing it right now
        if not installed.exists():
            npm = shutil.which("npm")
            if npm is None:
                pytest.skip(
                    "npm is not installed: cannot install the ACP SDK (.ci/run runs npm ci)"
                )
            npm_ci(npm, SDK_CLIENT, installed)
    return node


@dataclass
class Report:
    """What the SDK client observed in one scenario, plus the raw frames per connection."""

    result: dict[str, Any]
    connections: list[dict[str, Any]]
    wire: WireServer
    violations: list[dict[str, Any]] = field(default_factory=list)

    def methods(self, direction: str = "a2c") -> list[str]:
        """Methods of every request/notification sent in one direction, on all connections."""
        return [
            f["msg"]["method"]
            for c in self.connections
            for f in c["frames"]
            if f["dir"] == direction and isinstance(f.get("msg"), dict) and "method" in f["msg"]
        ]

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The session/update payloads the client received (``result["updates"]``), in order."""
        found = [u["update"] for u in self.result["updates"]]
        return [u for u in found if kind is None or u["sessionUpdate"] == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"].get("text", "") for u in self.updates(kind))

    def sent_to_model(self) -> str:
        """Everything Kiln sent to the model, as one JSON string."""
        return json.dumps(self.wire.bodies("/v1/messages"))


@dataclass
class Conformance:
    """``run(scenario, steps, **params)`` -> Report; the schema check must come back clean."""

    node: str
    tmp: Path
    kiln_home: Path
    workspace: Path
    runs: int = 0

    @property
    def hold(self) -> dict[str, str]:
        """A model step that holds the model call open until the scenario is over."""
        return {"wait_for": str(self.tmp / "release")}

    def run(self, scenario: str, steps: list[Any], **params: Any) -> Report:
        self.runs += 1
        (self.tmp / "release").unlink(missing_ok=True)
        with WireServer(steps) as wire:
            config = {
                "scenario": scenario,
                "command": KILN_ACP,
                "env": self._env(wire),
                "workspace": str(self.workspace),
                "params": params,
                "timeoutMs": SCENARIO_TIMEOUT * 1000,
            }
            config_file = self.tmp / f"sdk-{scenario}-{self.runs}.json"
            config_file.write_text(json.dumps(config), encoding="utf-8")
            done = subprocess.run(
                [self.node, str(SDK_CLIENT / "run.mjs"), str(config_file)],
                capture_output=True,
                text=True,
                timeout=NODE_TIMEOUT,
                cwd=SDK_CLIENT,
            )
            (self.tmp / "release").write_text("scenario over", encoding="utf-8")  # free `hold`
        assert done.returncode == 0, done.stderr[-4000:]
        raw = json.loads(done.stdout)
        report = Report(raw.get("result") or {}, raw["connections"], wire, raw["violations"])
        stderr = "\n".join(c["stderr"] for c in report.connections)
        assert raw["failure"] is None, (
            f"{raw['failure']}\n--- last frames ---\n{last_frames(report)}\n"
            f"--- kiln stderr ---\n{stderr[-4000:]}"
        )
        assert report.violations == [], json.dumps(report.violations, indent=1)[:8000]
        for connection in report.connections:
            assert connection["exit"]["code"] == 0, connection["stderr"][-4000:]
        assert "Traceback" not in stderr, stderr[-4000:]
        return report

    def _env(self, wire: WireServer) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(
            KILN_HOME=str(self.kiln_home),
            KILN_PROVIDER="anthropic",
            ANTHROPIC_BASE_URL=wire.url,
            ANTHROPIC_API_KEY="test-key",
            PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        )
        env.pop("KILN_SCRIPT", None)
        return env


def last_frames(report: Report, count: int = 12) -> str:
    """The end of each connection's exchange, for a scenario that failed midway."""
    lines = []
    for n, connection in enumerate(report.connections):
        for frame in connection["frames"][-count:]:
            lines.append(f"[{n}] {frame['ms']:>6} ms {frame['dir']} {frame['line'][:240]}")
    return "\n".join(lines)


def call(name: str, **args: Any) -> dict[str, Any]:
    """A scripted model step that calls one tool."""
    return {"tool_calls": [{"name": name, "input": args}]}
