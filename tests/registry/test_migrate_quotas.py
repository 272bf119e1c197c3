"""`kiln registry migrate` holds the target's size quotas, and refuses a copy past them whole.

Before, a copy ignored `--namespace-bytes` and `--versions-per-skill`: a target served with a
1 KB namespace quota took in every byte of the source, leaving the namespace past its quota
for good. Now the copy is measured first (what the target holds plus every version it lacks)
and refused with one line and exit 1 before anything is written. The publish rate does not
apply. Real `kiln registry migrate` processes between SQLite files and blob folders.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from skills_registry.registry.app import create_app
from tests.registry.conftest import (
    cli_env,
    kiln,
    make_skill,
    publish_skill,
    start_registry,
    tree_snapshot,
)


def _dump(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        lines = list(conn.iterdump())
    conn.close()
    return lines


def test_migrate_refuses_a_copy_past_the_targets_quotas_and_writes_nothing(
    tmp_path: Path,
) -> None:
    src, dst, skills = tmp_path / "src", tmp_path / "dst", tmp_path / "skills"
    source = start_registry(src)
    try:
        notes = make_skill(skills, "notes")
        sizes = [publish_skill(source, notes, v)["archiveSize"] for v in ("1.0.0", "2.0.0")]
        sizes.append(publish_skill(source, make_skill(skills, "todo"), "1.0.0")["archiveSize"])
    finally:
        source.stop()
    key = src / "keys" / "ed25519.key"
    target = start_registry(dst, create_app(dst, signing_key=key))  # holds one skill already
    try:
        held = publish_skill(target, make_skill(skills, "extra"), "1.0.0")["archiveSize"]
    finally:
        target.stop()
    needed = held + sum(sizes)
    env = cli_env(tmp_path / "home")

    def migrate(*limits: str, to: Path = dst, **extra: str) -> tuple[int, str, str]:
        result = kiln(
            "registry", "migrate", "--from", f"sqlite://{src}/registry.db",
            "--from-blobs", f"file://{src}/blobs", "--to", f"sqlite://{to}/registry.db",
            "--to-blobs", f"file://{to}/blobs", "--signing-key", str(key), *limits,
            env={**env, **extra}, cwd=tmp_path,
        )  # fmt: skip
        return result.returncode, result.stdout, result.stderr

    before = (_dump(dst / "registry.db"), tree_snapshot(dst / "blobs"))
    refusals = [
        # what the target holds counts: the source alone would fit
        (("--namespace-bytes", str(needed - 1)), {}, "(namespaceBytes) is"),
        (("--versions-per-skill", "1"), {}, "acme/notes would give it 2"),
        ((), {"KILN_REGISTRY_VERSIONS_PER_SKILL": "1"}, "(versionsPerSkill) is 1"),
    ]
    for limits, extra, words in refusals:
        code, out, err = migrate(*limits, **extra)
        assert code == 1 and out == "", (limits, out, err)
        assert words in err and "nothing was copied" in err, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert (_dump(dst / "registry.db"), tree_snapshot(dst / "blobs")) == before, limits

    # a target that was not there is not left behind, empty, by a refusal: nor its folders
    for limits in (("--versions-per-skill", "1"), ("--namespace-bytes", "1")):
        code, out, err = migrate(*limits, to=tmp_path / "new" / "registry")
        assert code == 1 and "nothing was copied" in err, (limits, err)
        assert not (tmp_path / "new").exists(), sorted((tmp_path / "new").rglob("*"))

    # exactly at the quota fits; a second run counts nothing twice
    for copied in ("3 versions copied", "0 versions copied"):
        code, out, err = migrate("--namespace-bytes", str(needed), "--versions-per-skill", "2")
        assert code == 0 and copied in out, (out, err)
