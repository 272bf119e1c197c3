"""Azure OpenAI through the openai SDK's Azure client: a real `kiln run` against the wire server,
which sees Azure's path, api-version and api-key header."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import RecordedRequest, WireServer

pytestmark = [pytest.mark.e2e]

AZURE_VARS = ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT",
              "OPENAI_API_VERSION", "KILN_PROVIDER", "KILN_MODEL")  # fmt: skip
OTHER_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in AZURE_VARS + OTHER_KEYS}
    env["KILN_HOME"] = str(tmp_path / "home")
    env.update(extra)
    return env


def _run(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "Say hello", "--root", str(repo), *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _served(
    tmp_path: Path, reply: str, *args: str, **azure: str
) -> tuple[subprocess.CompletedProcess[str], RecordedRequest]:
    """A run against the wire server as the Azure endpoint, and the one request it sent."""
    with WireServer([reply]) as srv:
        proc = _run(tmp_path, _env(tmp_path, AZURE_OPENAI_ENDPOINT=srv.url, **azure), *args)
    assert proc.returncode == 0, proc.stderr
    (request,) = [r for r in srv.requests if r.method == "POST"]
    return proc, request


def test_azure_is_chosen_by_its_variables_and_speaks_azures_wire(tmp_path: Path) -> None:
    proc, request = _served(
        tmp_path,
        "Hello from the deployment.",
        "--output-format",
        "stream-json",
        AZURE_OPENAI_API_KEY="az-secret",
        KILN_MODEL="team-gpt4o",
    )
    init = json.loads(proc.stdout.splitlines()[0])
    assert init["type"] == "init"
    assert init["provider"] == "azure" and init["model"] == "team-gpt4o"
    assert "Hello from the deployment." in proc.stdout
    path, _, query = request.path.partition("?")
    assert path == "/openai/deployments/team-gpt4o/chat/completions"
    assert query == "api-version=2024-10-21"
    assert request.headers.get("api-key") == "az-secret"
    assert "authorization" not in request.headers
    assert request.body["stream"] is True and request.body["tools"]


def test_the_api_version_and_deployment_come_from_azures_own_variables(tmp_path: Path) -> None:
    _, request = _served(
        tmp_path,
        "ok",
        AZURE_OPENAI_API_KEY="k",
        AZURE_OPENAI_DEPLOYMENT="prod-mini",
        OPENAI_API_VERSION="2025-04-01-preview",
    )
    assert request.path == (
        "/openai/deployments/prod-mini/chat/completions?api-version=2025-04-01-preview"
    )


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"AZURE_OPENAI_API_KEY": "k", "AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:9"},
         "azure: no deployment named"),
        ({"KILN_PROVIDER": "azure", "AZURE_OPENAI_API_KEY": "k", "KILN_MODEL": "d"},
         "azure: AZURE_OPENAI_ENDPOINT is not set"),
        ({"KILN_PROVIDER": "azure", "AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:9",
          "KILN_MODEL": "d"}, "azure: AZURE_OPENAI_API_KEY is not set"),
        ({"KILN_PROVIDER": "azure", "AZURE_OPENAI_API_KEY": "k", "KILN_MODEL": "d",
          "AZURE_OPENAI_ENDPOINT": "NAME.openai.azure.com"}, "is not an http:// or https:// URL"),
    ],
)  # fmt: skip
def test_an_incomplete_azure_setting_is_one_line_before_any_request(
    tmp_path: Path, extra: dict[str, str], says: str
) -> None:
    proc = _run(tmp_path, _env(tmp_path, **extra))
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr
    assert "Traceback" not in proc.stderr
