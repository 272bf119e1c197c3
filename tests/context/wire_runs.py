"""Real `kiln run` processes against the wire server, and what a prompt cache sees of the bytes
they sent: for each request, the first place where it stops repeating the request before it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent.testing.wire_server import WireServer

ROOT = Path(__file__).resolve().parents[2]


def without_markers(value: Any) -> Any:
    """A body without ``cache_control``: a breakpoint that moves is not content."""
    if isinstance(value, dict):
        return {k: without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_markers(v) for v in value]
    return value


def as_sent(raw: bytes) -> dict[str, Any]:
    """A request as its bytes have it (``json.loads`` keeps their key order), markers dropped."""
    return without_markers(json.loads(raw))  # type: ignore[no-any-return]


def _bytes(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def first_change(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Where ``after`` stops repeating all of ``before`` ('' when it extends it): the tools,
    the system prompt or a message that was already sent. Anthropic tools declared with
    ``defer_loading`` may be appended: they are not part of the prompt until loaded."""
    old, new_tools = before.get("tools") or [], after.get("tools") or []
    added = new_tools[len(old) :]
    if _bytes(new_tools[: len(old)]) != _bytes(old) or not all(
        t.get("defer_loading") for t in added
    ):
        return "tools"
    if _bytes(before.get("system")) != _bytes(after.get("system")):
        return "system"
    new = after.get("messages") or []
    for i, message in enumerate(before.get("messages") or []):
        if i >= len(new) or _bytes(message) != _bytes(new[i]):
            return f"message {i}"
    return ""


def breaks(raws: list[bytes]) -> list[tuple[int, str]]:
    """(request index, what changed) for every request that rewrote what the one before sent."""
    bodies = [as_sent(r) for r in raws]
    out = []
    for i in range(1, len(bodies)):
        where = first_change(bodies[i - 1], bodies[i])
        if where:
            out.append((i, where))
    return out


class KilnRuns:
    """One session driven turn by turn, each turn a new `kiln run` process (``--resume``)."""

    def __init__(self, tmp: Path, server: WireServer, api: str = "anthropic") -> None:
        self.server = server
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(KILN_HOME=str(tmp / "home"), PYTHONPATH=str(ROOT))
        env.pop("KILN_PROVIDER", None)
        if api == "anthropic":
            env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)
        else:
            env.update(KILN_PROVIDER="openai", OPENAI_API_KEY="k",
                       OPENAI_BASE_URL=server.openai_base_url, KILN_MODEL="gpt-4.1")  # fmt: skip
        self.env = env
        self.session = ""

    def turn(self, root: Path, task: str, *args: str, **env: str) -> dict[str, Any]:
        cmd = [sys.executable, "-m", "lsp_server", "run", "--root", str(root), "--mode", "yolo",
               "--output-format", "json"]  # fmt: skip
        if self.session:
            cmd += ["--resume", self.session]
        proc = subprocess.run([*cmd, *args, task], env={**self.env, **env}, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
        result = json.loads(proc.stdout)
        self.session = result["session_id"]
        return result  # type: ignore[no-any-return]

    def raws(self) -> list[bytes]:
        return [r.raw for r in self.server.requests if r.method == "POST"]
