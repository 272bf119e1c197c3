"""`ci` refuses destructive commands (docs/security.md section 5), whatever their spelling: `rm -rf
*` was refused but `rm -rf */`, `rm -fr ?*` and `rm -r ./*/` emptied the checkout, and `git
clean --force -d` removed the untracked files `git clean -fd` could not (an `.env` the user made,
a build), through the real `kiln run --mode ci`. So did `rm -rf "$PWD"`, `rm -rf $(pwd)` and
`rm -rf ../proj`, the workspace by its absolute path or from the folder above it, and `rm -rf
src/../*`, `rm -rf [a-z]*` and `find src/.. -delete`: `*` and `.` by way of a folder and back,
or with a bracket expression for `?`; and `find . -name '*' -delete`, `! -name '*.keep'` and
`-name x -o -type f`, whose name test narrows nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.test_command_disguises import checkout, run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


@pytest.mark.parametrize(
    "command",
    ["rm -rf */", "rm -fr ?*", "rm -r ./*/", "git clean --force -d -x", 'rm -rf "$PWD"',
     "rm -rf $(pwd)", "rm -rf ../proj", "rm -rf src/../*", "rm -rf */../*", "rm -rf [a-z]*",
     "find src/.. -delete", "find . -name '*' -delete", "find . ! -name '*.keep' -delete",
     "find . -name x -o -type f -delete"],
)  # fmt: skip
def test_a_wide_removal_is_refused_in_ci(tmp_path: Path, kiln_home: Path, command: str) -> None:
    home, root = checkout(tmp_path, kiln_home)
    (kiln_home / "settings.json").write_text("{}")  # ci refuses it without a deny rule
    (root / ".env").write_text("TOKEN=mine\n")
    results = run(tmp_path, kiln_home, home, root, command)
    assert "destructive commands are not allowed in ci mode" in results, results
    assert (root / "src" / "main.py").exists() and (root / ".env").exists(), results


def test_git_clean_of_ignored_files_is_refused_in_ci(tmp_path: Path, kiln_home: Path) -> None:
    """`git clean -Xdf` removes the ignored files, the user's `.env` among them: before, the
    uppercase `X` before the `f` hid the force flag from the label."""
    home, root = checkout(tmp_path, kiln_home)
    (kiln_home / "settings.json").write_text("{}")
    (root / ".gitignore").write_text(".env\n")
    (root / ".env").write_text("TOKEN=mine\n")
    results = run(tmp_path, kiln_home, home, root, "git clean -Xdf")
    assert "destructive commands are not allowed in ci mode" in results, results
    assert (root / ".env").exists(), results


@pytest.mark.parametrize("command", ["git stash push", "rm -rf * http://example.invalid/"])
def test_a_network_grant_runs_nothing_destructive(
    tmp_path: Path, kiln_home: Path, command: str
) -> None:
    """With the network granted in the user's settings, `ci` ran a network command unasked, and a
    command both destructive and network-using (the subcommand `stash` before `push`, a URL
    among `rm`'s operands) was only the latter: it stashed the user's edit, or emptied the
    checkout."""
    home, root = checkout(tmp_path, kiln_home)
    (kiln_home / "settings.json").write_text(json.dumps({"sandbox": {"network": True}}))
    (root / "src" / "main.py").write_text("print('my edit')\n")
    results = run(tmp_path, kiln_home, home, root, command)
    assert "destructive commands are not allowed in ci mode" in results, results
    assert (root / "src" / "main.py").read_text() == "print('my edit')\n", results


def test_a_clean_forced_by_config_is_refused_in_ci(tmp_path: Path, kiln_home: Path) -> None:
    """`clean.requireForce=false` makes `git clean` remove without `-f`: before, only `-f` made a
    clean destructive, and `git -c clean.requireForce=false clean -dx` removed the user's `.env`
    in ci. Every clean but a dry run (`-n`) is destructive now."""
    home, root = checkout(tmp_path, kiln_home)
    (kiln_home / "settings.json").write_text("{}")
    (root / ".env").write_text("TOKEN=mine\n")
    results = run(tmp_path, kiln_home, home, root, "git -c clean.requireForce=false clean -dx")
    assert "destructive commands are not allowed in ci mode" in results, results
    assert (root / ".env").exists(), results


@pytest.mark.parametrize("command", ["git checkout-index -a -f", "git read-tree -u --reset HEAD"])
def test_git_plumbing_that_discards_edits_is_refused_in_ci(
    tmp_path: Path, kiln_home: Path, command: str
) -> None:
    """Both write the index's files over the work tree as `git reset --hard` does: before, they
    ran in ci and the user's uncommitted edit was gone."""
    home, root = checkout(tmp_path, kiln_home)
    (kiln_home / "settings.json").write_text("{}")
    (root / "src" / "main.py").write_text("print('my edit')\n")
    results = run(tmp_path, kiln_home, home, root, command)
    assert "destructive commands are not allowed in ci mode" in results, results
    assert (root / "src" / "main.py").read_text() == "print('my edit')\n", results


@pytest.mark.parametrize("command", ["git reset --har", "git checkout --forc HEAD"])
def test_an_abbreviated_git_option_that_discards_edits_is_refused_in_ci(
    tmp_path: Path, kiln_home: Path, command: str
) -> None:
    """git takes a long option by any unambiguous start: before, `git reset --har` was no
    `--hard` to the label, ran in ci, and the user's uncommitted edit was gone."""
    home, root = checkout(tmp_path, kiln_home)
    (kiln_home / "settings.json").write_text("{}")
    (root / "src" / "main.py").write_text("print('my edit')\n")
    results = run(tmp_path, kiln_home, home, root, command)
    assert "destructive commands are not allowed in ci mode" in results, results
    assert (root / "src" / "main.py").read_text() == "print('my edit')\n", results
