"""`find -delete` removes what it finds, and `find -execdir CMD` (`-okdir`) runs CMD inside the folder of each file it finds: a relative
path CMD writes lands there, under the starting points, not at the workspace root where the
check met it before (`find src -execdir cp main.py ../config/app.yml ';'` rewrote a file a
`Write(config/**)` deny rule protects, and `find config -delete` removed its files). Through the real `kiln run`, without the sandbox
(which holds the deny rules on its own) in yolo, and in ci."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run, stream_transcript, tool_results


def workspace(tmp_path: Path, kiln_home: Path) -> Path:
    root = tmp_path / "home" / "proj"
    (root / "config").mkdir(parents=True)
    (root / "config" / "app.yml").write_text("kept\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    (kiln_home / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Write(config/**)"]}})
    )
    return root


def run(root: Path, tmp_path: Path, kiln_home: Path, command: str, mode: str) -> str:
    script = tmp_path / "script.json"
    call = {"name": "run_command", "input": {"command": command}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "done"]))
    extra = ("--no-sandbox",) if mode == "yolo" else ()
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode=mode,
                    output="stream-json", extra=extra)  # fmt: skip
    return " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))


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
