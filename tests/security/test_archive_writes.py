"""What `cpio` and `7z` unpack or pack: the check cannot read their archives, so an unpack is not
understood (refused in ci) and any name in the folder it unpacks into meets the deny rules; the
archive `cpio -o -F FILE` and `7z a FILE` write is a path like a redirection's. Before, none of
these was read, and each wrote past a `Write(config/*.yml)` deny rule in yolo (docs/security.md
section 3). Through the real `kiln run`."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.test_option_writes import run, workspace

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


@pytest.mark.parametrize("command", [
    "7z x -oconfig a.7z",
    "7za e -y a.7z -oconfig",
    "cpio -idm < a.cpio",
    "cpio -i -F a.cpio --directory=config",
    "cpio -pdm config < list.txt",
    "cpio -o -F config/new.yml < list.txt",
    "find . | cpio -oO config/new.yml",
    "7z a config/new.yml notes.txt",
])  # fmt: skip
def test_cpio_and_7z_meet_the_deny_rules(tmp_path: Path, kiln_home: Path, command: str) -> None:
    root = workspace(tmp_path, kiln_home, ["Write(config/*.yml)"])
    for name in ("a.7z", "a.cpio", "list.txt"):
        (root / name).write_text("notes.txt\n")
    results = run(root, tmp_path, kiln_home, command, "yolo")
    assert not (root / "config" / "new.yml").exists(), results
    assert "denied by rule Write(config/*.yml)" in results, results


@pytest.mark.parametrize("command", ["cpio -id < a.cpio", "7z x a.7z"])
def test_an_unpack_of_an_archive_the_check_cannot_read_is_not_understood(
    tmp_path: Path, kiln_home: Path, command: str
) -> None:
    root = workspace(tmp_path, kiln_home, [])
    (root / "a.cpio").write_text("x\n")
    (root / "a.7z").write_text("x\n")
    results = run(root, tmp_path, kiln_home, command, "ci")
    name = command.split()[0]
    assert f"not understood ({name} archives are not read" in results, results
