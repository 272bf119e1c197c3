"""Kiln's ``git status`` of the workspace, seeing past the index bits that make git look away
from a file: ``assume-unchanged`` and ``skip-worktree`` (``git update-index``). A command of the
run that set one on a file and then edited it hid the edit from ``git status``, so from the
patch, the summary and the report: the run said "nothing to do" (exit 11) while the checkout held
a change nobody was shown, which a later step of the job would run. The status reads a copy of
the index without those bits; in a sparse checkout, a ``skip-worktree`` file that is absent
(outside the cone) keeps its bit, as it is no deletion."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lsp_server.headless.repo_git import Layout


def status(layout: Layout, *args: str) -> str:
    """``git status ARGS`` in ``layout``'s workspace with every flagged file looked at."""
    flagged = []
    sparse: bool | None = None
    for entry in layout.git("ls-files", "-v", "-z", "--", ".").split("\0"):
        tag, path = entry[:1], entry[2:]
        if not path or tag == "H":
            continue
        if tag.lower() == "s" and not os.path.lexists(layout.root / path):  # skip-worktree
            if sparse is None:
                sparse = layout.run("config", "--bool", "core.sparseCheckout").stdout == "true\n"
            if sparse:
                continue
        flagged.append(path)  # lower case: assume-unchanged
    if not flagged or not (layout.git_dir / "index").is_file():
        return layout.git("status", *args)
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        shutil.copyfile(layout.git_dir / "index", index)
        env = {"GIT_INDEX_FILE": str(index)}
        for bit in ("--no-assume-unchanged", "--no-skip-worktree"):  # one a call: git takes one
            layout.git("update-index", bit, "-z", "--stdin", env=env,
                       stdin="\0".join(flagged) + "\0")  # fmt: skip
        return layout.git("status", *args, env=env)
