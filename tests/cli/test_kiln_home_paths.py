"""A `KILN_HOME` that is not an absolute path, through the real `kiln` (README): a relative one is
taken from the folder `kiln` starts in, a leading `~` is the home folder, for every part alike.
Before, a relative one was printed and passed on relative, and `~` was expanded by the session
store but not by the registry client, which read `./~/…` in the current folder instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _kiln(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args], cwd=cwd, env={**base, **env},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_relative_kiln_home_is_taken_from_the_starting_folder(tmp_path: Path) -> None:
    start = tmp_path / "start"
    start.mkdir()
    proc = _kiln(start, "memory", "path", "--user", KILN_HOME="state/kiln")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(start / "state" / "kiln" / "KILN.md")


def test_a_leading_tilde_is_the_home_folder_for_the_registry_client_too(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "kh").mkdir(parents=True)
    # the discard port: refused at once, nothing listens there
    (home / "kh" / "settings.json").write_text('{"registry": "http://127.0.0.1:9"}')
    start = tmp_path / "start"
    start.mkdir()
    proc = _kiln(start, "skills", "search", "notes", HOME=str(home), KILN_HOME="~/kh")
    assert "cannot reach registry http://127.0.0.1:9" in proc.stderr, proc.stderr
    assert proc.returncode != 0 and list(start.iterdir()) == []  # no folder named `~` here
