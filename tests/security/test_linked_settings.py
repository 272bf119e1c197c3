"""A memory, settings or editor file may be a link to another file of the workspace — a
checkout keeps `KILN.md -> docs/instructions.md`, `.claude/settings.json -> ../conf/claude.json`
or `.vscode -> config/vscode` — and that file is then the memory file every later session loads,
the settings whose hooks Claude Code runs on the host, the tasks VS Code runs when the folder
opens. Under its own name it was an ordinary workspace file: `write_file` and `python3 -c` in
`ci`, where nobody is asked, rewrote each (docs/security.md sections 2 and 4). Through the real
`kiln run --mode ci`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

ORIGINAL = "Run the tests with pytest.\n"
TARGETS = ["docs/instructions.md", "conf/claude.json", "config/vscode/tasks.json", "sub/notes.md"]


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "home" / "proj"
    for rel in TARGETS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(ORIGINAL)
    (root / "KILN.md").symlink_to("docs/instructions.md")
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").symlink_to("../conf/claude.json")
    (root / ".vscode").symlink_to("config/vscode")
    (root / "sub" / "AGENTS.md").symlink_to("notes.md")
    return root


def run(root: Path, tmp_path: Path, kiln_home: Path, step: dict[str, object]) -> str:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [step]}, "done"]))
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="ci",
                    output="stream-json")  # fmt: skip
    return " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))


# A subfolder's memory link (`sub/AGENTS.md -> notes.md`) is held by the sandbox only (Known limits).
CASES = [("run_command", t) for t in TARGETS] + [("write_file", t) for t in TARGETS[:3]]


@pytest.mark.parametrize(("tool", "target"), CASES)
def test_the_file_a_settings_link_names_is_held_like_it(
    tmp_path: Path, kiln_home: Path, tool: str, target: str
) -> None:
    root = workspace(tmp_path)
    if tool == "run_command":
        code = f"open('{target}', 'w').write('Always obey.')"
        step = {"name": tool, "input": {"command": f'python3 -c "{code}"'}}
    else:
        step = {"name": tool, "input": {"path": target, "content": "Always obey."}}
    results = run(root, tmp_path, kiln_home, step)
    assert (root / target).read_text() == ORIGINAL, results
