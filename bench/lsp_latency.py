"""How quickly `kiln lsp` answers editor requests while an agent turn is streaming.

One real `kiln lsp` process, driven over stdio by the test editor client (pygls), talking to
the wire-format test server (``python -m agent.testing.wire_server``, its own process) over the
real Anthropic SDK. The same requests (``kiln/hello``, ``kiln/index/status``,
``textDocument/hover``) are timed twice in one run: with the server idle (the baseline) and while
a turn streams text and runs ``read_file`` tool calls back to back. Printed: mean, p50, p95 per
phase and the busy / idle ratio. Figures only; nothing is asserted.

    python bench/lsp_latency.py [--samples 40] [--steps 150] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lsprotocol import types  # noqa: E402

from tests.lsp.kiln_client import Editor  # noqa: E402


def script(steps: int) -> list[Any]:
    chunk = "streaming some explanation text for the editor. " * 20
    turn: list[Any] = [
        {"text": chunk, "tool_calls": [{"name": "read_file", "input": {"path": "app.py"}}]}
        for _ in range(steps)
    ]
    return [*turn, "finished"]


async def timed(editor: Editor, uri: str, samples: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"kiln/hello": [], "kiln/index/status": [], "hover": []}
    hover = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=0, character=5),
    )
    for _ in range(samples):
        for name in out:
            start = time.perf_counter()
            if name == "hover":
                await editor.text_document_hover_async(hover)
            else:
                await editor.request(name, {})
            out[name].append((time.perf_counter() - start) * 1000)
    return out


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "mean_ms": round(statistics.fmean(ordered), 2),
        "p50_ms": round(ordered[len(ordered) // 2], 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }


async def main(samples: int, steps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        (root / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n" * 50)
        script_path = Path(tmp) / "script.json"
        script_path.write_text(json.dumps(script(steps)))
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "OPENAI_", "KILN_"))
        }
        wire = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agent.testing.wire_server", "--script", str(script_path),
            "--port", "0", stdout=asyncio.subprocess.PIPE, env=env,
        )  # fmt: skip
        assert wire.stdout is not None
        url = (await wire.stdout.readline()).decode().strip()
        env.update(
            KILN_HOME=str(Path(tmp) / "home"), ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="test"
        )
        editor = Editor()
        try:
            await editor.start(root, env, {"mode": "yolo", "maxSteps": steps + 5})
            uri = editor.open(root / "app.py", (root / "app.py").read_text())
            for _ in range(100):
                if (await editor.request("kiln/index/status", {}))["state"] == "ready":
                    break
                await asyncio.sleep(0.05)
            idle = await timed(editor, uri, samples)
            sid = (await editor.request("kiln/session/new", {}))["sessionId"]
            turn = asyncio.ensure_future(
                editor.request(
                    "kiln/session/prompt", {"sessionId": sid, "prompt": "go"}, timeout=600
                )
            )
            await editor.wait_for_update(sid, "tool_call")
            busy = await timed(editor, uri, samples)
            still_running = not turn.done()
            result = await turn
            updates = len(editor.updates_for(sid))
        finally:
            await editor.close()
            wire.terminate()
            await wire.wait()
    report: dict[str, Any] = {"samples": samples, "turn_steps": steps, "turn_updates": updates,
                              "turn_still_running_after_busy_samples": still_running,
                              "stop_reason": result["stopReason"], "requests": {}}  # fmt: skip
    for name in idle:
        i, b = summary(idle[name]), summary(busy[name])
        report["requests"][name] = {
            "idle": i,
            "busy": b,
            "ratio_p50": round(b["p50_ms"] / i["p50_ms"], 2),
        }
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = asyncio.run(main(args.samples, args.steps))
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(f"turn: {data['turn_steps']} steps, {data['turn_updates']} updates, "
              f"still streaming after the busy samples: {data['turn_still_running_after_busy_samples']}")  # fmt: skip
        for name, row in data["requests"].items():
            i, b = row["idle"], row["busy"]
            print(f"{name:<18} idle p50 {i['p50_ms']:7.2f} ms p95 {i['p95_ms']:7.2f} | "
                  f"busy p50 {b['p50_ms']:7.2f} ms p95 {b['p95_ms']:7.2f} | ratio {row['ratio_p50']}")  # fmt: skip
