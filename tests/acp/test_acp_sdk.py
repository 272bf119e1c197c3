"""`kiln acp` driven by the official ACP TypeScript SDK, every frame checked against the schema.

Each test runs one scenario of ``tests/acp/sdk_client/run.mjs``: a Node client built on
``@agentclientprotocol/sdk`` starts `kiln acp`, talks to it like an editor would, and checks
every message both ways against the protocol's published JSON schema (unknown fields
included) and its ordering rules. The model is the scripted wire server behind the real
Anthropic SDK. The tests assert what the client saw, what reached the model and the disk.
This file holds the handshake, turns and their ends, errors and slash commands; files and
permissions, cancels and loads have their own ``test_acp_sdk_*.py``.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from agent.turn import STUCK_LIMIT
from tests.acp.sdk_runner import SDK_CLIENT, Conformance, call, node_for_sdk_client
from tests.registry.conftest import make_skill

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_schema_checker_flags_what_it_should() -> None:
    """The checker's own tests: each rule fails on a crafted bad exchange (so a clean report
    from a real run means something)."""
    node = node_for_sdk_client()
    done = subprocess.run([node, "--test", "schema_check.test.mjs"], cwd=SDK_CLIENT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# pass 10" in done.stdout


def test_initialize_negotiates_version_and_capabilities(conformance: Conformance) -> None:
    report = conformance.run("handshake", [], otherVersions=[2])
    init = report.result["initialize"]
    # ACP: the requested version if the agent speaks it, else the latest it speaks (1).
    assert {v: r["protocolVersion"] for v, r in init.items()} == {"1": 1, "2": 1}
    caps = init["1"]["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"embeddedContext": True}  # no image, no audio
    assert caps["sessionCapabilities"] == {"list": {}}
    assert init["1"]["authMethods"] == []
    assert init["1"]["agentInfo"]["name"] == "kiln"
    session = report.result["newSession"]
    assert session["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in session["modes"]["availableModes"]] == ["ask", "auto-edit", "yolo"]
    assert [s["sessionId"] for s in report.result["list"]["sessions"]] == [session["sessionId"]]
    errors = report.result["errors"]
    assert errors["secondInitialize"]["code"] == -32600
    assert errors["beforeInitialize"]["code"] == -32600
    # The client advertised terminals; docs/acp.md says Kiln runs commands itself.
    assert not [m for m in report.methods("a2c") if m.startswith("terminal/")]


def test_prompt_streams_chunks_and_ends_the_turn(conformance: Conformance) -> None:
    reply = "Here is a reply long enough to arrive in several streamed deltas."
    report = conformance.run("prompt", [reply], text="say something")
    assert report.result["response"] == {"stopReason": "end_turn"}
    assert report.text() == reply
    [usage] = report.updates("usage_update")
    assert usage["used"] > 0 and usage["size"] > 0 and usage["cost"]["currency"] == "USD"
    assert "say something" in report.sent_to_model()


def test_two_sessions_run_turns_at_once_each_with_its_own_updates(conformance: Conformance) -> None:
    steps = [
        # The model is slower on the first, so the second turn runs inside it (nothing below
        # depends on the timing: each session must get its own text either way).
        {"match": "first session", "delay": 0.3, "text": "Answer for the first."},
        {"match": "second session", "text": "Answer for the second."},
    ]
    report = conformance.run("two_sessions", steps)
    assert report.result["responses"] == [{"stopReason": "end_turn"}] * 2
    assert report.result["texts"] == ["Answer for the first.", "Answer for the second."]


def test_a_turn_ending_on_a_limit_closes_its_calls(conformance: Conformance) -> None:
    """Kiln's step limit is ACP's `max_turn_requests`; the calls of the last step still end
    (the schema check flags a tool call left running at the answer)."""
    steps = [call("list_files"), call("list_files"), "never reached"]
    report = conformance.run("prompt", steps, sessionMeta={"kiln": {"maxSteps": 1}})
    assert report.result["response"] == {"stopReason": "max_turn_requests"}
    assert [u["status"] for u in report.updates("tool_call_update") if u.get("status")] == [
        "in_progress",  # ACP's lifecycle: pending (the tool_call), running, done
        "completed",
    ]
    assert "never reached" not in report.text()
    # the note `kiln run` prints is the turn's last visible message, not only a thought
    assert report.text().endswith("Stopped: step limit reached (1).\n")


def test_a_stuck_turn_ends_as_max_turn_requests(conformance: Conformance) -> None:
    """A turn ended because one call failed the same way over and over (Kiln's
    `repeated_failure`) reaches the client as a stop reason ACP allows."""
    steps = [*[call("list_files", path="list_files")] * STUCK_LIMIT, "never reached"]
    report = conformance.run("prompt", steps)
    assert report.result["response"] == {"stopReason": "max_turn_requests"}
    assert len(report.wire.requests) == STUCK_LIMIT and "never reached" not in report.text()
    assert report.text() == (
        f"\n\nStopped: list_files failed the same way {STUCK_LIMIT} times in a row "
        "(list_files does not exist).\n"
    )


def test_a_provider_failure_is_shown_and_ends_the_turn(conformance: Conformance) -> None:
    report = conformance.run("prompt", [{"error": 400, "message": "prompt is too long"}])
    assert report.result["response"] == {"stopReason": "end_turn"}  # docs/acp.md: no error reason
    assert "Error: " in report.text() and "prompt is too long" in report.text()


def test_errors_carry_the_protocols_codes(conformance: Conformance) -> None:
    report = conformance.run("errors", ["Still serving."])
    codes = {name: error["code"] for name, error in report.result["errors"].items()}
    assert codes == {
        "promptUnknown": -32002,  # ACP's "resource not found"
        "setModeUnknown": -32002,
        "loadUnknown": -32002,
        "relativeCwd": -32602,
        "promptWithoutBlocks": -32602,
        "cwdNotAString": -32602,
        "unknownMethod": -32601,
        "authenticate": -32602,  # no auth method is advertised
        "imageBlock": -32602,  # promptCapabilities.image is not advertised
        "audioBlock": -32602,  # nor promptCapabilities.audio
    }
    assert (
        report.result["errors"]["audioBlock"]["message"] == "unsupported prompt block type 'audio'"
    )
    assert report.result["authMethods"] == []
    # Hints name ACP methods, not the `kiln lsp` ones.
    assert all("kiln/" not in str(e.get("data")) for e in report.result["errors"].values())
    assert report.result["response"] == {"stopReason": "end_turn"}


def test_skills_are_slash_commands_the_schema_accepts(conformance: Conformance) -> None:
    """`available_commands_update` and a `/skill` prompt, every frame checked by the schema."""
    make_skill(conformance.kiln_home / "skills", "deploy", "Ship the app.", body="DEPLOY-STEPS\n")
    steps = [{"match": "re:DEPLOY-STEPS[\\s\\S]*to staging", "text": "Deploying."}]
    report = conformance.run("prompt", steps, text="/deploy to staging")
    assert report.result["response"] == {"stopReason": "end_turn"}
    assert report.text() == "Deploying."
    [offered] = report.updates("available_commands_update")
    assert [c["name"] for c in offered["availableCommands"]] == [
        "compact",
        "context",
        "model",
        "deploy",
    ]
    frames = [f["msg"] for f in report.connections[0]["frames"] if isinstance(f.get("msg"), dict)]
    [new] = [m["id"] for m in frames if m.get("method") == "session/new"]
    answered = next(i for i, m in enumerate(frames) if m.get("id") == new and "result" in m)
    told = next(i for i, m in enumerate(frames) if "availableCommands" in json.dumps(m))
    assert answered < told  # the client knows the session the update names


def test_builtin_commands_answer_through_the_sdk(conformance: Conformance) -> None:
    """`/model`, `/context`, `/compact` reached the model as text; now they are offered in a
    session without skills and answered by Kiln, every frame checked by the schema."""
    steps = [{"match": "hello", "text": "Hi."}]
    texts = ["/model", "/model claude-haiku-4-5", "hello", "/context", "/compact"]
    report = conformance.run("prompts", steps, texts=texts)
    assert report.result["responses"] == [{"stopReason": "end_turn"}] * len(texts)
    [offered] = report.updates("available_commands_update")
    assert [c["name"] for c in offered["availableCommands"]] == ["compact", "context", "model"]
    listed, switched, hello, context, compacted = report.result["replies"]
    assert listed.startswith("Model: `claude-sonnet-4-6` (anthropic).\nOthers (known): ")
    assert "`claude-haiku-4-5`" in listed
    assert switched == (
        "Model: `claude-haiku-4-5` (anthropic) from the next message on, instead of "
        "`claude-sonnet-4-6`."
    )
    assert hello == "Hi."
    assert context.startswith("Context: 2 messages, 1 turn, 1 step; window ")
    assert compacted == "Nothing to compact yet."
    [body] = report.wire.bodies("/v1/messages")  # only `hello` reached the model, on the new one
    assert body["model"] == "claude-haiku-4-5"
    assert "/model" not in report.sent_to_model() and "/context" not in report.sent_to_model()
