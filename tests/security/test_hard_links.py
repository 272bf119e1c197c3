"""A hard link in the workspace to a file outside it (pnpm's store, `cp -al`; git cannot ship
one): the file tools replace the link with a new file (write to a temporary file, then rename),
so an edit never reaches the outside file (docs/security.md section 2), through the real
`kiln run` in `yolo`. Commands writing through such a link are a known limit."""

from __future__ import annotations

import os
from pathlib import Path

from tests.security.scripted_run import kiln_run_json


def test_file_tools_do_not_write_through_a_hard_link(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    outside = host_dir / "store.js"
    outside.write_text("original\n")
    root = tmp_path / "repo"
    root.mkdir()
    os.link(outside, root / "edit.js")
    os.link(outside, root / "write.js")
    kiln_run_json(root, [
        {"tool_calls": [{"name": "edit_file", "input": {"path": "edit.js", "old_text": "original",
                                                          "new_text": "edited"}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "write.js", "content": "new\n"}}]},
    ], home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json")  # fmt: skip
    assert (root / "edit.js").read_text() == "edited\n"
    assert (root / "write.js").read_text() == "new\n"
    assert outside.read_text() == "original\n"
    assert outside.stat().st_nlink == 1  # both links were replaced, not written through
