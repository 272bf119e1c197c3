"""Provider faults through the real SDKs against the wire server: a 200 SSE reply of garbage,
a stream that drops before any output (retried like a 5xx), one that drops after output (the
partial reply is kept and the message says so). The `kiln run` cases run the wire server as
its own process, as editor and CI tests do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.errors import ProviderError
from agent.providers.anthropic import AnthropicModel
from agent.providers.openai import OpenAIModel
from agent.providers.retry import RetryPolicy
from agent.testing.wire_server import WireServer
from agent.types import ModelReply, Request, TextDelta, user_message
from tests.repos import git

PROVIDERS = ["anthropic", "openai"]


def _model(provider: str, srv: WireServer, retry: RetryPolicy) -> Any:
    if provider == "anthropic":
        return AnthropicModel(base_url=srv.anthropic_base_url, api_key="k", retry=retry)
    return OpenAIModel(base_url=srv.openai_base_url, api_key="k", retry=retry, model="gpt-4o")


async def _collect(model: Any) -> tuple[str, ModelReply | None]:
    text, reply = [], None
    request = Request(system="s", tools=[], messages=[user_message("hi")])
    try:
        async for item in model.stream(request):
            if isinstance(item, TextDelta):
                text.append(item.text)
            elif isinstance(item, ModelReply):
                reply = item
    finally:
        await model.aclose()
    return "".join(text), reply


class WireProcess:
    """``python -m agent.testing.wire_server`` in its own process, stopped on exit."""

    def __init__(self, steps: list[Any], folder: Path) -> None:
        script = folder / "script.json"
        script.write_text(json.dumps(steps))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agent.testing.wire_server", "--script", str(script),
             "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:")

    def __enter__(self) -> WireProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.communicate(timeout=30)


def _run_kiln(
    provider: str, srv: WireProcess, repo: Path, home: Path
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env["KILN_HOME"] = str(home)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    if provider == "anthropic":
        env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.url)
    else:
        env.update(OPENAI_BASE_URL=srv.url + "/v1")
    argv = [sys.executable, "-m", "lsp_server", "run", "say hi", "--root", str(repo)]
    argv += ["--output-format", "json", "--ci"]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    return repo


@pytest.mark.e2e
@pytest.mark.parametrize("provider", PROVIDERS)
def test_garbage_event_stream_exits_4_with_result_patch_and_transcript(
    tmp_path: Path, provider: str
) -> None:
    repo = _repo(tmp_path)
    with WireProcess([{"garbage": True}] * 8, tmp_path) as srv:
        proc = _run_kiln(provider, srv, repo, tmp_path / "home")
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    result = json.loads(proc.stdout)
    assert result["exit_code"] == 4 and result["outcome"] == "provider error"
    assert "malformed reply stream" in result["error"]
    assert Path(result["transcript"]).is_file()
    assert Path(result["patch"]).is_file()
    assert Path(result["summary"]).is_file()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_drop_before_any_output_is_retried(provider: str, fast_retry, waits) -> None:
    with WireServer([{"die": True}, "recovered"]) as srv:
        text, reply = await _collect(_model(provider, srv, fast_retry))
        assert len(srv.bodies()) == 2
    assert text == "recovered" and reply is not None
    assert len(waits.waits) == 1  # one backoff, as for a 5xx


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_drop_after_output_is_final_and_keeps_the_text(
    provider: str, fast_retry, waits
) -> None:
    with WireServer([{"text": "The answer is forty", "die": True}, "never sent"]) as srv:
        with pytest.raises(ProviderError) as info:
            await _collect(_model(provider, srv, fast_retry))
        assert len(srv.bodies()) == 1  # never retried: the text was already shown
    assert getattr(info.value, "partial_text", "") == "The answer is forty"
    assert "broke off after 19 characters" in str(info.value)
    assert waits.waits == []


@pytest.mark.e2e
@pytest.mark.parametrize("provider", PROVIDERS)
def test_kiln_run_keeps_partial_reply_when_stream_drops(tmp_path: Path, provider: str) -> None:
    repo = _repo(tmp_path)
    with WireProcess([{"text": "Partial findings so far", "die": True}], tmp_path) as srv:
        proc = _run_kiln(provider, srv, repo, tmp_path / "home")
    assert proc.returncode == 4, proc.stderr
    result = json.loads(proc.stdout)
    assert "broke off" in result["error"]
    lines = Path(result["transcript"]).read_text().splitlines()
    assert "Partial findings so far" in lines[-1]
