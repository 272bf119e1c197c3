"""Archives: reproducible builds, tree hashes, and the hostile input suite at the archive layer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from skills_registry.archive import (
    ArchiveContents,
    build_archive,
    extract,
    read_archive,
    read_dir,
    sha256_hex,
    tree_hash,
    tree_hash_dir,
)
from skills_registry.registry.errors import ArchiveError
from tests.registry.conftest import FIXTURES, make_skill, tree_snapshot
from tests.registry.hostile import CASES, _file, _with_skill, many_files


def test_build_is_reproducible_and_round_trips(tmp_path: Path) -> None:
    first = build_archive(read_dir(FIXTURES / "internal-comms"))
    (tmp_path / "copy").mkdir()
    second = build_archive(read_dir(FIXTURES / "internal-comms"))
    assert sha256_hex(first) == sha256_hex(second)
    contents = read_archive(first)
    assert contents.top == "internal-comms"
    assert "examples/faq-answers.md" in contents.files
    out = extract(contents, tmp_path / "out")
    assert (
        tree_hash_dir(out)
        == tree_hash(contents.files)
        == tree_hash_dir(FIXTURES / "internal-comms")
    )


def test_tree_hash_ignores_order_but_not_content() -> None:
    a = {"a.txt": b"1", "b/c.txt": b"2"}
    assert tree_hash(a) == tree_hash(dict(reversed(list(a.items()))))
    assert tree_hash(a) != tree_hash({"a.txt": b"1", "b/c.txt": b"3"})
    assert tree_hash(a) != tree_hash({"a.txt": b"1", "b/d.txt": b"2"})


def test_executable_bit_survives(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, "runner", extra={"scripts/go.sh": "#!/bin/sh\necho hi\n"})
    (skill / "scripts/go.sh").chmod(0o755)
    contents = read_archive(build_archive(read_dir(skill)))
    assert contents.executables == {"scripts/go.sh"}
    out = extract(contents, tmp_path / "out")
    assert (out / "scripts/go.sh").stat().st_mode & 0o111


def test_packing_refuses_symlinks(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, "linky")
    (skill / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(ArchiveError, match="only regular files"):
        read_dir(skill)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_archive_rejected_and_nothing_written(case: str, tmp_path: Path) -> None:
    builder, words = CASES[case]
    dest = tmp_path / "skills"
    dest.mkdir()
    (dest / "keep.txt").write_text("untouched")
    before = tree_snapshot(tmp_path)
    with pytest.raises(ArchiveError) as info:
        extract(read_archive(builder()), dest / "evil")
    assert words in str(info.value)
    assert "\n" not in str(info.value)
    assert tree_snapshot(tmp_path) == before
    assert not (tmp_path.parent / "escaped.txt").exists()


def test_extract_refuses_existing_destination(tmp_path: Path) -> None:
    (tmp_path / "there").mkdir()
    with pytest.raises(FileExistsError):
        extract(ArchiveContents("x", {"SKILL.md": b"x"}), tmp_path / "there")


def _one(name: str, data: bytes = b"x") -> bytes:
    return _with_skill(lambda tar: _file(tar, name, data))


LONG_NAME = "evil/" + "d/" * 200  # 405 characters of folders


@pytest.mark.parametrize(
    ("archive", "words"),
    [
        (lambda: _one("evil/big", b"\0" * (8 * 2**20 + 1)), "the limit is 8388608"),
        (lambda: _one(LONG_NAME + "n" * 108), "is not allowed"),  # 513 characters
        (lambda: _one("evil/" + "c" * 256), "is 256 bytes"),
        (lambda: _one("evil/" + "\u00e9" * 128), "is 256 bytes"),  # 128 characters
        (lambda: _one("evil/notes.md "), "ending in '.' or ' '"),
        (lambda: _one("evil/a\x1b[2Jb.md"), "control or formatting"),
        (lambda: many_files(1000), "more than 1000 files"),  # with SKILL.md: 1,001
        (
            lambda: _with_skill(
                lambda tar: [_file(tar, f"evil/f{i}", b"\0" * (7 * 2**20)) for i in range(5)]
            ),
            "decompression bomb",
        ),
    ],
    ids=["file-8mb+1", "name-513", "component-256", "component-256-bytes", "trailing-space",
         "c0-escape", "1001-files", "35mb-in-all"],
)  # fmt: skip
def test_the_documented_limits_are_exact(archive: Callable[[], bytes], words: str) -> None:
    """docs/security.md section 6c: 8 MB per file, 32 MB in all, 1,000 files, 512-character
    names, 255-byte components: one past each is refused in one line..."""
    with pytest.raises(ArchiveError) as info:
        read_archive(archive())
    assert words in str(info.value) and "\n" not in str(info.value), info.value


def test_the_documented_limits_themselves_are_allowed() -> None:
    """... and each limit itself is allowed."""
    at_limits = _with_skill(
        lambda tar: [
            _file(tar, "evil/big", b"\0" * (8 * 2**20)),
            _file(tar, LONG_NAME + "n" * 107, b"x"),  # 512 characters
            _file(tar, "evil/" + "c" * 255, b"x"),
            *[_file(tar, f"evil/f{i}", b"x") for i in range(996)],  # 1,000 files in all
        ]
    )
    contents = read_archive(at_limits)
    assert len(contents.files) == 1000
