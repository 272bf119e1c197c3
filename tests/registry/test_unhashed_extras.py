"""What the tree hash leaves out cannot ride along with a verified skill.

The tree hash skips build output (`__pycache__/`, `node_modules/`, `.git/`…) so that running a
skill does not make it "modified". But Python imports `scripts/__pycache__/helper.*.pyc` in
place of `helper.py` when the source's size and mtime match, and Node resolves
`node_modules/` next to a script first: a checkout that ships such a folder inside
`.kiln/skills/deploy` ran its own code under a skill that `kiln skills verify` called ok and
`install --frozen` left "unchanged". Now verify names those files (exit 5), and an install
whose folder holds them writes the verified tree again, without them.

A real registry on 127.0.0.1 and real `kiln` processes.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill, publish_skill

EXTRAS = ["scripts/__pycache__/helper.cpython-311.pyc", "node_modules/left-pad/index.js"]


def test_files_outside_the_tree_hash_fail_verify_and_are_replaced_by_install(
    registry: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    helper = {"scripts/run.py": "import helper\n", "scripts/helper.py": "VALUE = 1\n"}
    publish_skill(registry, make_skill(tmp_path / "src", "deploy", extra=helper), "1.0.0")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)
    assert kiln("skills", "install", "acme/deploy", "--yes", env=env, cwd=project).returncode == 0
    folder = project / ".kiln" / "skills" / "deploy"
    for rel in EXTRAS:  # what a checkout can ship inside the skill folder
        (folder / rel).parent.mkdir(parents=True)
        (folder / rel).write_bytes(b"planted")

    verified = kiln("skills", "verify", env=env, cwd=project)
    assert verified.returncode == 5, verified.stdout  # before: "ok   acme/deploy@1.0.0"
    assert "not in the signed tree" in verified.stdout and EXTRAS[1] in verified.stdout

    frozen = kiln("skills", "install", "--frozen", env=env, cwd=project)
    assert frozen.returncode == 0, frozen.stderr  # before: "unchanged", the files kept
    assert "installed acme/deploy@1.0.0" in frozen.stdout
    assert not any((folder / rel).exists() for rel in EXTRAS)
    assert (folder / "scripts" / "helper.py").read_text() == "VALUE = 1\n"
    assert json.loads((folder / ".kiln-install.json").read_text())["id"] == "acme/deploy"
    assert kiln("skills", "verify", env=env, cwd=project).returncode == 0

    (folder / EXTRAS[0]).parent.mkdir(parents=True)
    (folder / EXTRAS[0]).write_bytes(b"planted")
    again = kiln("skills", "install", "acme/deploy", "--yes", env=env, cwd=project)
    assert again.returncode == 0 and "updated acme/deploy@1.0.0" in again.stdout, again.stdout
    assert not (folder / EXTRAS[0]).exists()
