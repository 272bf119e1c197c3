"""`kiln registry sweep` never deletes an archive a publish has just stored.

The sweep spares archives younger than `--older-than` (an hour): a publish stores its archive,
then writes the version row. An archive is stored by content, so a publish of bytes that an
earlier, failed publish left behind finds them already there. The bucket store writes them
again (the object is young again); the folder store kept the old file, old mtime and all, so a
sweep between that publish's store and its row deleted the archive the new version then named.
Now storing bytes that are already there makes them young again in both stores.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from skills_registry.archive import build_archive, read_dir
from skills_registry.registry.backends import open_backends
from tests.registry.conftest import cli_env, fails, kiln, make_skill


def test_an_archive_stored_again_is_not_swept(tmp_path: Path) -> None:
    data = tmp_path / "data"
    backends = open_backends(data, None, None)
    archive = build_archive(read_dir(make_skill(tmp_path / "src", "notes")))
    sha = backends.blobs.put(archive)  # a publish refused after storing: an orphan
    path = data / "blobs" / sha[:2] / sha
    hours_ago = time.time() - 7200
    os.utime(path, (hours_ago, hours_ago))

    assert backends.blobs.put(archive) == sha  # the same bytes, published again: in flight
    swept = kiln(
        "registry", "sweep", "--data", str(data), env=cli_env(tmp_path / "home"), cwd=tmp_path
    )
    assert swept.returncode == 0, swept.stderr
    assert "removed 0 unreferenced archives" in swept.stdout  # before: 1, the one in flight
    assert path.read_bytes() == archive
    backends.close()


def test_a_sweep_of_a_mistyped_registry_deletes_nothing(tmp_path: Path) -> None:
    """`kiln registry sweep --data TYPO --blobs REAL` created an empty database in TYPO, read
    every archive of REAL as unreferenced and deleted them all. A folder without a registry is
    refused, and so is a database holding no skill beside an archive store holding archives
    (a mistyped --db)."""
    data, env = tmp_path / "data", cli_env(tmp_path / "home")
    backends = open_backends(data, None, None)
    archive = build_archive(read_dir(make_skill(tmp_path / "src", "notes")))
    sha = backends.blobs.put(archive)
    path = data / "blobs" / sha[:2] / sha
    hours_ago = time.time() - 7200
    os.utime(path, (hours_ago, hours_ago))
    backends.close()
    blobs = f"file://{data / 'blobs'}"
    typo = tmp_path / "dta"
    swept = kiln("registry", "sweep", "--data", str(typo), "--blobs", blobs, env=env, cwd=tmp_path)
    fails(swept, 1, f"no registry in {typo}")
    assert not typo.exists()
    empty = tmp_path / "empty"
    open_backends(empty, None, None).close()  # a registry with no skill at all
    swept = kiln("registry", "sweep", "--db", f"sqlite://{empty / 'registry.db'}",
                 "--blobs", blobs, env=env, cwd=tmp_path)  # fmt: skip
    fails(swept, 1, "the database holds no skill, yet the archive store holds 1 archives")
    assert path.read_bytes() == archive
