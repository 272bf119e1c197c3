"""Property tests: packing round-trips, and no input makes the reader fail any other way."""

from __future__ import annotations

import gzip

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skills_registry.archive import ArchiveContents, build_archive, read_archive, tree_hash
from skills_registry.registry.errors import ArchiveError

_DEVICES = {"con", "prn", "aux", "nul", *(f"{p}{i}" for p in ("com", "lpt") for i in range(1, 10))}


def _portable(part: str) -> bool:
    """A name every file system keeps as written (Windows drops a trailing '.', maps devices)."""
    return part not in (".", "..") and not part.endswith(".") and part.split(".")[0] not in _DEVICES


_part = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.é", min_size=1, max_size=12
).filter(_portable)
_path = st.lists(_part, min_size=1, max_size=3).map("/".join)
_files = st.dictionaries(_path, st.binary(max_size=300), min_size=1, max_size=12)


def _consistent(files: dict[str, bytes]) -> bool:
    """No path may be both a file and a folder of another file."""
    return not any(other.startswith(path + "/") for path in files for other in files)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_files.filter(_consistent))
def test_build_then_read_round_trips(files: dict[str, bytes]) -> None:
    archive = build_archive(ArchiveContents("skill", files))
    contents = read_archive(archive)
    assert contents.top == "skill"
    assert contents.files == files
    assert tree_hash(contents.files) == tree_hash(files)
    assert build_archive(ArchiveContents("skill", dict(reversed(list(files.items()))))) == archive


_VALID = build_archive(
    ArchiveContents("skill", {"SKILL.md": b"---\nname: skill\n---\n", "a/b.txt": b"x" * 300})
)
_RAW = gzip.decompress(_VALID)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, len(_RAW) - 1), st.integers(0, 255)), min_size=1, max_size=8)
)
def test_corrupted_tar_fails_only_with_archive_error(edits: list[tuple[int, int]]) -> None:
    raw = bytearray(_RAW)
    for index, value in edits:
        raw[index] = value
    try:
        contents = read_archive(gzip.compress(bytes(raw)))
    except ArchiveError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(".." not in p.split("/") and not p.startswith("/") for p in contents.files)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_fail_only_with_archive_error(data: bytes) -> None:
    for blob in (data, b"\x1f\x8b" + data):
        try:
            read_archive(blob)
        except ArchiveError:
            pass
