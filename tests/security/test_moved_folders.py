"""A move takes every name under its source along: `mv` needs no `-r` to move a folder, so
moving a folder that holds a denied one (the workspace itself: `cd .. && mv proj p2`) let a
later write rewrite a file a `Write(config/**)` deny rule protects, then put the folder back.
Its sources are now met as any name under them, as `rm -r`'s are, and a folder above the
workspace (`mv /path/to/home …`) as any name in the workspace. Through the real
`kiln run`, without the sandbox (which holds the deny rules on its own) in yolo, and in ci."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.config_deny_run import run, workspace


@pytest.mark.parametrize("mode", ["yolo", "ci"])
@pytest.mark.parametrize(
    "command",
    [
        "cd .. && mv proj p2 && echo planted > p2/config/app.yml; mv p2 proj",
        "mv ../proj ../p2 && echo planted > ../p2/config/app.yml; mv ../p2 ../proj",
        "mv src/../../proj ../p2 && echo planted > ../p2/config/app.yml; mv ../p2 ../proj",
        "mv {up} {tmp}/h2 && echo planted > {tmp}/h2/proj/config/app.yml; mv {tmp}/h2 {up}",
        "cd ../.. && mv home h2 && echo planted > h2/proj/config/app.yml; mv h2 home",
    ],
)
def test_moving_a_folder_that_holds_a_denied_one_is_refused(
    tmp_path: Path, kiln_home: Path, command: str, mode: str
) -> None:
    root = workspace(tmp_path, kiln_home)
    command = command.format(up=root.parent, tmp=tmp_path)
    results = run(root, tmp_path, kiln_home, command, mode)
    assert (root / "config" / "app.yml").read_text() == "kept\n", results
    assert "denied by rule Write(config/**)" in results, results


@pytest.mark.parametrize("mode", ["yolo", "ci"])
def test_moving_another_folder_runs(tmp_path: Path, kiln_home: Path, mode: str) -> None:
    root = workspace(tmp_path, kiln_home)
    results = run(root, tmp_path, kiln_home, "mv src lib", mode)
    assert (root / "lib" / "main.py").exists(), results
