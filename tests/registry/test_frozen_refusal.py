"""`kiln skills install --frozen` refuses a lockfile as a whole: every entry is verified before
any skill is written, so one entry that fails leaves the others as they were.

Real registry on 127.0.0.1, `kiln` as real processes, a fresh checkout (no `.kiln`, an empty
cache). Before, the entries were installed one by one in id order: `acme/alpha` was written,
`acme/beta` was refused, and the command printed only the refusal, exit 5, with `alpha` left
in place as if the refused install had gone half-way.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.registry.conftest import (
    LiveRegistry,
    cli_env,
    kiln,
    make_skill,
    publish_skill,
    tree_snapshot,
)


@pytest.mark.parametrize(
    ("tamper", "words"),
    [
        ({"sha256": "0" * 64}, "does not match"),  # a pull request editing the lockfile
        ({"registry": "http://127.0.0.1:9"}, "no key is pinned for registry"),
    ],
)
def test_a_refused_entry_leaves_every_skill_unwritten(
    registry: LiveRegistry, tmp_path: Path, project: Path, tamper: dict[str, str], words: str
) -> None:
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)
    for name in ("alpha", "beta"):
        publish_skill(registry, make_skill(tmp_path / "src", name), "1.0.0")
        done = kiln("skills", "install", f"acme/{name}", "--yes", env=env, cwd=project)
        assert done.returncode == 0, done.stderr
    shutil.rmtree(project / ".kiln")  # a fresh checkout of the repository
    shutil.rmtree(tmp_path / "home/cache")
    lock = json.loads((project / "skills-lock.json").read_text())
    beta = dict(lock["skills"]["acme/beta"])
    lock["skills"]["acme/beta"].update(tamper)
    (project / "skills-lock.json").write_text(json.dumps(lock, indent=2))
    before = (project / "skills-lock.json").read_bytes()

    frozen = kiln("skills", "install", "--frozen", env=env, cwd=project)
    assert frozen.returncode == 5, (frozen.stdout, frozen.stderr)
    assert words in frozen.stderr and frozen.stderr.count("\n") == 1, frozen.stderr
    assert tree_snapshot(project / ".kiln") == {}  # alpha not written either
    assert (project / "skills-lock.json").read_bytes() == before

    lock["skills"]["acme/beta"] = beta  # the lockfile as committed: both install
    (project / "skills-lock.json").write_text(json.dumps(lock, indent=2))
    frozen = kiln("skills", "install", "--frozen", env=env, cwd=project)
    assert frozen.returncode == 0, frozen.stderr
    for name in ("alpha", "beta"):
        assert (project / ".kiln/skills" / name / "SKILL.md").is_file()
