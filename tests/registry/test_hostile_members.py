"""Archive entries that were let through before: sparse members (a few bytes that unpack to
megabytes of holes), names that collide on macOS and Windows (case, NFC/NFD), names Windows reads
as another file or a device (`C:`, `SKILL.md:stream`, `SKILL.md.`, `CON`), and names that spoof a
review (bidi overrides, zero-width and C1 control characters).

Each archive is built with tarfile in the test, refused at publish by the real registry over
HTTP (422, no blob left), and refused at install by the real `kiln` CLI when a compromised
registry signs it: one line, exit non-zero, no skill folder, no temp folder, lockfile unchanged.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from skills_registry.archive import read_archive
from skills_registry.registry.errors import ArchiveError
from skills_registry.registry.storage import now_iso
from tests.registry.conftest import LiveRegistry, blob_names, cli_env, kiln, tree_snapshot

SKILL_MD = b"---\nname: evil\ndescription: Looks harmless.\n---\n# Evil\n"


def _tar_with(info: tarfile.TarInfo, data: bytes, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """``evil/SKILL.md`` plus one member as given (pax or GNU headers of the attacker's choice)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as tar:
        first = tarfile.TarInfo("evil/SKILL.md")
        first.size = len(SKILL_MD)
        tar.addfile(first, io.BytesIO(SKILL_MD))
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def _pax_path() -> bytes:
    """The ustar name is harmless; the pax ``path`` record that overrides it is not."""
    info = tarfile.TarInfo("evil/notes.txt")
    info.size, info.pax_headers = 5, {"path": "evil/../../escaped.txt"}
    return _tar_with(info, b"pwned")


def _pax_size() -> bytes:
    """A pax ``size`` record declaring 1 TB for a 5-byte member."""
    info = tarfile.TarInfo("evil/notes.txt")
    info.size, info.pax_headers = 5, {"size": str(10**12)}
    return _tar_with(info, b"pwned")


def _gnu_long_name() -> bytes:
    info = tarfile.TarInfo("evil/" + "a" * 120 + "/../../../escaped.txt")
    info.size = 5
    return _tar_with(info, b"pwned", fmt=tarfile.GNU_FORMAT)


def _link_then_file() -> bytes:
    """A symlinked folder, then a file written "through" it (the classic tar escape)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        link = tarfile.TarInfo("evil/dir")
        link.type, link.linkname = tarfile.SYMTYPE, "/tmp"
        tar.addfile(link)
        info = tarfile.TarInfo("evil/dir/escaped.txt")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"pwned"))
    return gzip.compress(raw.getvalue(), mtime=0)


def _archive(*entries: tuple[str, bytes], sparse: int = 0) -> bytes:
    """``evil/SKILL.md`` plus ``entries``; ``sparse`` adds that many 8 MB sparse members of one
    stored byte each (GNU sparse format 0.1 in pax headers, as GNU tar writes them)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("evil/SKILL.md", SKILL_MD), *entries):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for i in range(sparse):
            info = tarfile.TarInfo(f"evil/hole{i}.bin")
            info.size = 1
            info.pax_headers = {
                "GNU.sparse.map": f"{8 * 2**20 - 1},1",
                "GNU.sparse.size": "8388608",
            }
            tar.addfile(info, io.BytesIO(b"x"))
    return gzip.compress(raw.getvalue(), mtime=0)


# name -> (archive builder, words the one-line refusal must contain)
CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    # 5 x 8 MB from ~600 bytes: before, every hole was filled in memory and only the total
    # refused afterwards (999 of them: 8 GB from a few kilobytes).
    "sparse": (lambda: _archive(sparse=5), "sparse entries are not allowed"),
    "case": (lambda: _archive(("evil/Skill.md", b"x")), "differ only by case"),
    "nfd": (
        lambda: _archive(("evil/caf\u00e9.md", b"a"), ("evil/cafe\u0301.md", b"b")),
        "Unicode normalization",
    ),
    "case-folder": (
        lambda: _archive(("evil/Docs", b"a file"), ("evil/docs/x.md", b"x")),
        "both a file and inside a file",
    ),
    # Two folders here, one on macOS and Windows (whose tree then holds `Scripts/b.sh`, never
    # the signed one; the review showed two folders). Accepted before.
    "case-folders": (
        lambda: _archive(("evil/Scripts/a.sh", b"a"), ("evil/scripts/b.sh", b"b")),
        "folders 'Scripts' and 'scripts' differ only by case",
    ),
    # `ı` (dotless i) upper-cases to `I`, as `i` does: one name on Windows. Accepted before.
    "dotless-i": (
        lambda: _archive(("evil/scr\u0131pt.sh", b"a"), ("evil/script.sh", b"b")),
        "differ only by case",
    ),
    # A regular file named `x/`: tarfile reads a file, GNU tar makes a folder and skips the
    # bytes, so two readers saw two trees. Accepted before.
    "file-named-like-a-folder": (
        lambda: _archive(("evil/notes/", b"payload")),
        "a file's name ends in '/'",
    ),
    "drive": (lambda: _archive(("evil/C:/Windows/x.txt", b"x")), "':'"),
    "stream": (lambda: _archive(("evil/SKILL.md:hidden", b"x")), "':'"),
    "trailing-dot": (lambda: _archive(("evil/SKILL.md.", b"x")), "ending in '.'"),
    "windows-chars": (lambda: _archive(("evil/why?.md", b"x")), "Windows does not allow"),
    "device-name": (lambda: _archive(("evil/scripts/con.sh", b"x")), "reserves for a device"),
    "bidi": (
        lambda: _archive(("evil/scripts/\u202egnp.sh", b"#!/bin/sh\ncurl evil\n")),
        "formatting characters",
    ),
    "zero-width": (lambda: _archive(("evil/SKILL\u200b.md", b"x")), "formatting characters"),
    "c1-csi": (lambda: _archive(("evil/a\u009b2Jb.txt", b"x")), "control or formatting"),
    # Refused before too (regression guards): tarfile applies these headers before our checks.
    "pax-path": (_pax_path, "'..' component"),
    "pax-size": (_pax_size, "declares 1000000000000 bytes"),
    "gnu-long-name": (_gnu_long_name, "'..' component"),
    "link-then-file": (_link_then_file, "symlink entries are not allowed"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_when_read(case: str) -> None:
    builder, words = CASES[case]
    with pytest.raises(ArchiveError) as info:
        read_archive(builder())
    assert words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_at_publish(registry: LiveRegistry, case: str) -> None:
    builder, words = CASES[case]
    before = blob_names(registry)
    response = httpx.put(
        f"{registry.url}/v1/skills/acme/evil/versions/1.0.0",
        content=builder(),
        headers={"Authorization": f"Bearer {registry.token('acme')}"},
    )
    assert response.status_code == 422, response.text
    assert any(words in e for e in response.json()["errors"])
    assert blob_names(registry) == before


def plant(registry: LiveRegistry, skill_id: str, version: str, archive: bytes, tree: str) -> None:
    """What a compromised registry does: store and sign an archive its publish would refuse."""
    reg = registry.app.state.registry  # type: ignore[attr-defined]
    sha = reg.blobs.put(archive)
    namespace, _, name = skill_id.partition("/")
    reg.store.add_version(
        {
            "id": skill_id,
            "name": name,
            "namespace": namespace,
            "version": version,
            "description": "x",
            "archiveSha256": sha,
            "archiveSize": len(archive),
            "treeHash": tree,
            "files": [],
            "frontmatter": {},
            "tools": [],
            "scan": {"findings": [], "scripts": [], "verdict": "clean"},
            "publishedAt": now_iso(),
            "signatures": [
                {
                    "keyId": reg.signer.key_id,
                    "algorithm": "ed25519",
                    "signature": reg.signer.sign(skill_id, version, sha),
                }
            ],
        }
    )


@pytest.mark.parametrize("case", ["sparse", "case", "stream", "bidi", "case-folders"])
def test_signed_by_a_compromised_registry_and_refused_by_kiln(
    registry: LiveRegistry, tmp_path: Path, case: str
) -> None:
    builder, words = CASES[case]
    plant(registry, "acme/evil", "1.0.0", builder(), "0" * 64)
    project = tmp_path / "project"
    (project / ".kiln" / "skills").mkdir(parents=True)
    lock = project / "skills-lock.json"
    lock.write_text('{"lockfileVersion": 1, "skills": {}}\n')
    before = tree_snapshot(project)
    done = kiln(
        "skills", "install", "acme/evil", "--registry", registry.url, "--yes",
        env=cli_env(tmp_path / "home"), cwd=project,
    )  # fmt: skip
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert tree_snapshot(project) == before  # no folder, no .tmp-*, lockfile as it was


def test_mode_bits_beyond_executable_are_dropped(registry: LiveRegistry, tmp_path: Path) -> None:
    """setuid, setgid, sticky and world-writable bits in an archive never reach the disk."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in [
            ("evil/SKILL.md", SKILL_MD, 0o6666),
            ("evil/scripts/run.sh", b"#!/bin/sh\n", 0o7777),
        ]:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
        folder = tarfile.TarInfo("evil/docs")
        folder.type, folder.mode = tarfile.DIRTYPE, 0o7777
        tar.addfile(folder)
    published = httpx.put(
        f"{registry.url}/v1/skills/acme/evil/versions/1.0.0",
        content=gzip.compress(raw.getvalue()),
        headers={"Authorization": f"Bearer {registry.token('acme')}"},
    )
    assert published.status_code == 201, published.text
    project = tmp_path / "project"
    project.mkdir()
    done = kiln(
        "skills", "install", "acme/evil", "--registry", registry.url, "--yes",
        env=cli_env(tmp_path / "home"), cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    folder_path = project / ".kiln/skills/evil"
    for name, executable in (("SKILL.md", False), ("scripts/run.sh", True)):
        mode = (folder_path / name).stat().st_mode
        assert mode & 0o7000 == 0 and mode & 0o022 == 0, oct(mode)  # whatever the umask
        assert bool(mode & 0o100) == executable, oct(mode)
    assert not (folder_path / "docs").exists()  # an empty folder holds no file: not written
