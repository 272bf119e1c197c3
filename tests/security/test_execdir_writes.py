"""`find -delete` removes what it finds, and `find -execdir CMD` (`-okdir`) runs CMD inside the folder of each file it finds: a relative
path CMD writes lands there, under the starting points, not at the workspace root where the
check met it before (`find src -execdir cp main.py ../config/app.yml ';'` rewrote a file a
`Write(config/**)` deny rule protects, and `find config -delete` removed its files). Through the real `kiln run`, without the sandbox
(which holds the deny rules on its own) in yolo, and in ci."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.config_deny_run import run, workspace


@pytest.mark.parametrize("mode", ["yolo", "ci"])
@pytest.mark.parametrize(
    "command",
    [
        "find src -execdir cp main.py ../config/app.yml ';'",
        "find src -execdir sh -c 'echo planted > ../config/app.yml' ';'",
        "find . -name app.yml -execdir sh -c 'echo planted > app.yml' ';'",
        "find config -execdir cp ../src/main.py app.yml ';'",
        "find config -type f -delete",
        "find . -name app.yml -delete",
        "find . -name main.py -exec true ';' -o -name app.yml -delete",
    ],
)
def test_an_execdir_write_into_a_denied_folder_is_refused(
    tmp_path: Path, kiln_home: Path, command: str, mode: str
) -> None:
    root = workspace(tmp_path, kiln_home)
    results = run(root, tmp_path, kiln_home, command, mode)
    assert (root / "config" / "app.yml").read_text() == "kept\n", results
    assert "denied by rule Write(config/**)" in results, results


@pytest.mark.parametrize("mode", ["yolo", "ci"])
def test_an_execdir_write_under_other_folders_runs(
    tmp_path: Path, kiln_home: Path, mode: str
) -> None:
    root = workspace(tmp_path, kiln_home)
    results = run(
        root, tmp_path, kiln_home, "find src -name '*.py' -execdir cp {} {}.bak ';'", mode
    )
    assert (root / "src" / "main.py.bak").read_text() == "print('hi')\n", results
