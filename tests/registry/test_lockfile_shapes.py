"""A lockfile entry whose fields have the wrong type (a cloned repository's, or a bad merge)
is one line naming the entry and exit 2, for every command that reads the lockfile.

Before, `"registry": 5` made `install --frozen`, `verify`, `update` and `outdated` an
"internal error" with a crash file, and `"version": ["1"]` was printed as `acme/x@['1']`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.registry.conftest import cli_env, kiln, tree_snapshot

GOOD = {
    "version": "1.0.0",
    "requested": "^1.0.0",
    "registry": "http://127.0.0.1:9",
    "sha256": "0" * 64,
    "treeHash": "0" * 64,
    "signature": "c2ln",
    "keyId": "ed25519:0000000000000000",
    "path": ".kiln/skills/x",
    "scripts": [],
}
BAD = {
    "registry": 5,
    "version": ["1"],
    "sha256": 7,
    "signature": None,
    "scripts": "run.sh",
    "grants": [1],
}


@pytest.mark.parametrize("field", sorted(BAD))
def test_a_field_of_the_wrong_type_is_one_line(field: str, tmp_path: Path, project: Path) -> None:
    lock = {"lockfileVersion": 1, "skills": {"acme/x": {**GOOD, field: BAD[field]}}}
    (project / "skills-lock.json").write_text(json.dumps(lock))
    before = tree_snapshot(project)
    env = cli_env(tmp_path / "home")
    for command in (["install", "--frozen"], ["verify"], ["update", "--yes"], ["outdated"]):
        result = kiln("skills", *command, env=env, cwd=project)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "internal error" not in result.stderr and result.stderr.count("\n") == 1
        assert f"lockfile entry 'acme/x' has an invalid {field!r}" in result.stderr
    assert tree_snapshot(project) == before
