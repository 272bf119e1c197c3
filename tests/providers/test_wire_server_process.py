"""The wire server as a standalone process, the way editor-client tests (Node, Neovim) use it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def start(script: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent.testing.wire_server",
            "--script",
            str(script),
            "--port",
            "0",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    return proc, url


def test_standalone_server_serves_a_scripted_flow(tmp_path: Path) -> None:
    script = tmp_path / "flow.json"
    log = tmp_path / "requests.jsonl"
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "search_code", "input": {"query": "add"}}]},
                {
                    "match": "calc.py",
                    "tool_calls": [{"name": "read_file", "input": {"path": "calc.py"}}],
                },
                {"match": "return a - b", "text": "Found the bug."},
            ]
        )
    )
    proc, url = start(script, "--requests-log", str(log))
    try:
        assert url.startswith("http://127.0.0.1:")
        messages: list[dict] = [{"role": "user", "content": "fix add"}]
        replies = []
        for tool_output in ["calc.py:1 def add(a, b)", "def add(a, b):\n    return a - b"]:
            body = {"model": "m", "max_tokens": 100, "messages": messages}
            reply = httpx.post(f"{url}/v1/messages", json=body, timeout=10).json()
            replies.append(reply)
            call = reply["content"][0]
            messages += [
                {"role": "assistant", "content": reply["content"]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call["id"], "content": tool_output}
                    ],
                },
            ]
        final = httpx.post(
            f"{url}/v1/messages",
            json={"model": "m", "max_tokens": 9, "messages": messages},
            timeout=10,
        ).json()
        assert [r["content"][0]["name"] for r in replies] == ["search_code", "read_file"]
        assert final["content"] == [{"type": "text", "text": "Found the bug."}]
        recorded = httpx.get(f"{url}/_kiln/requests", timeout=10).json()
        assert len(recorded) == 3 and len(log.read_text().splitlines()) == 3
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode == 0


def test_bad_script_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    proc = subprocess.run(
        [sys.executable, "-m", "agent.testing.wire_server", "--script", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "not valid JSON" in proc.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "agent.testing.wire_server", "--script", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and missing.stdout == ""
    # The hint names this command's option, not the scripted provider's variable.
    assert missing.stderr.strip().splitlines() == [
        f"wire_server: script file not found: {tmp_path / 'none'} "
        "(--script must name a JSON file of steps)"
    ]


def test_in_process_server_answers_plain_json_chat_completions() -> None:
    from agent.testing.wire_server import WireServer

    with WireServer(
        [
            {"text": "hi", "tool_calls": [{"name": "grep", "input": {"pattern": "x"}}]},
            {"error": 429, "retry_after": 2},
        ]
    ) as srv:
        body = {"model": "local", "messages": [{"role": "user", "content": "hello"}]}
        ok = httpx.post(f"{srv.openai_base_url}/chat/completions", json=body, timeout=10)
        limited = httpx.post(f"{srv.openai_base_url}/chat/completions", json=body, timeout=10)
        missing = httpx.post(f"{srv.url}/v1/nothing", json=body, timeout=10)
    choice = ok.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] == "hi"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {
        "pattern": "x"
    }
    assert ok.json()["usage"]["prompt_tokens"] > 0
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["type"] == "rate_limit_exceeded" and missing.status_code == 404
    assert (
        srv.requests[0].raw == json.dumps(body).encode() or json.loads(srv.requests[0].raw) == body
    )


def test_wait_for_step_holds_the_answer_until_the_file_exists(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from agent.testing.wire_server import WireServer

    release = tmp_path / "release"
    body = {"model": "local", "messages": [{"role": "user", "content": "hello"}]}
    with WireServer([{"wait_for": str(release)}, "released"]) as srv, ThreadPoolExecutor(1) as pool:
        url = f"{srv.openai_base_url}/chat/completions"
        answer = pool.submit(httpx.post, url, json=body, timeout=60)
        assert wait_until(lambda: len(srv.requests) == 1)  # the request arrived
        assert not answer.done()  # and is held while the file is missing
        release.touch()
        reply = answer.result(timeout=60)
    assert reply.json()["choices"][0]["message"]["content"] == "released"
