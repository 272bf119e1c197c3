"""Subdirectory memory flooding the context (docs/security.md section 6b). A memory file in a
subfolder is loaded the first time the agent touches something under it, each cut at 40,000
bytes; but a checkout may put one in each of a hundred nested folders, and one `read_file` of a
file at the bottom put 4 MB into the context, sent again with every later request. Through the
real `kiln run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run_json

pytestmark = pytest.mark.e2e


def test_subdirectory_memory_a_session_loads_is_bounded(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    folder = root
    for level in range(100):
        folder = folder / "d"
        folder.mkdir(parents=True)
        (folder / "KILN.md").write_text(f"level {level} notes " + "m" * 39_000 + "\n")
    (folder / "deep.py").write_text("x = 1\n")
    step = {"tool_calls": [{"name": "read_file",
                            "input": {"path": folder.relative_to(root).as_posix() + "/deep.py"}}]}  # fmt: skip
    _, out = kiln_run_json(
        root, [step], home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    messages = [json.loads(line) for line in Path(out["transcript"]).read_text().splitlines()]
    sizes = [len(json.dumps(m)) for m in messages]
    assert max(sizes) < 300_000, sizes
    text = json.dumps(messages)
    assert "level 0 notes" in text and "level 99 notes" not in text
    assert text.count("nor any further subdirectory memory file this session") == 1
