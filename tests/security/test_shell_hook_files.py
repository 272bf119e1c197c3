"""direnv's `.envrc` was protected, but mise reads `mise.toml` (and `.mise.toml`,
`mise.local.toml`, `.mise/config.toml`, `.config/mise.toml`) from every folder the user's shell
enters once `mise activate` is in their shell rc: `[env] _.source = "x.sh"` and `[hooks]` run
at the next prompt, on the host, and mise's trust is for the file's path, not its content, so a
trusted file the agent changes runs its new code. Before, `write_file`, `cp` and `python -c`
wrote them in `ci`. Now they are held like `.envrc` (docs/security.md section 4). Through the
real `kiln run --mode ci`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

TRUSTED = '[tools]\npython = "3.11"\n'
EVIL = '[env]\n_.source = "payload.sh"\n'
NEW = [".mise.toml", "mise.local.toml", ".mise/config.toml", ".config/mise.toml"]


def test_mise_config_is_held_like_envrc(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "home" / "proj"
    root.mkdir(parents=True)
    (root / "mise.toml").write_text(TRUSTED)
    (root / "evil.toml").write_text(EVIL)
    program = "; ".join(
        ["import pathlib", "p = pathlib.Path"]
        + [
            f"p('{n}').parent.mkdir(parents=True, exist_ok=True); p('{n}').write_text('x')"
            for n in NEW
        ]  # fmt: skip
    )
    calls = [
        {"name": "write_file", "input": {"path": "mise.toml", "content": EVIL}},
        {"name": "write_file", "input": {"path": ".mise.toml", "content": EVIL}},
        {"name": "run_command", "input": {"command": "cp evil.toml mise.toml"}},
        {"name": "run_command", "input": {"command": "python3 -c \"open('mise.toml', 'a').write('x')\"; echo ran-1"}},
        {"name": "run_command", "input": {"command": f'python3 -c "{program}"; echo ran-2'}},
    ]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [c]} for c in calls] + ["done"]))
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="ci",
                    output="stream-json")  # fmt: skip
    results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
    assert "ran-1" in results and "ran-2" in results, results
    assert (root / "mise.toml").read_text() == TRUSTED, results
    for name in NEW:
        assert not (root / name).exists(), (name, results)
