"""Incremental indexing: mtime first, then hash; deletes, renames, unsaved buffers, .gitignore."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index, PathOutsideRoot

from .conftest import write


def names(idx: Index, query: str, k: int = 10) -> list[tuple[str, str]]:
    return [(h.path, h.name) for h in idx.search(query, k)]


def test_second_run_parses_nothing_and_touch_only_rehashes(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "a.py", "def alpha_handler():\n    return 1\n")
    write(repo, "b.py", "def beta_handler():\n    return 2\n")
    idx = open_index(repo)
    first = idx.update()
    assert (first.files_seen, first.files_indexed, first.blocks) == (2, 2, 2)
    assert idx.update().files_indexed == 0  # mtime + size unchanged: not even read

    st = (repo / "a.py").stat()
    os.utime(repo / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    touched = idx.update()
    assert touched.files_indexed == 0  # same hash: not re-parsed
    assert idx.update().files_indexed == 0  # and the new mtime was recorded


def test_changed_file_is_reparsed_and_old_symbols_disappear(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    path = write(repo, "svc.py", "def old_name_handler():\n    return 1\n")
    idx = open_index(repo)
    idx.update()
    path.write_text("def fresh_name_handler():\n    return 2\n\n\ndef extra():\n    return 3\n")
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000_000))
    stats = idx.update()
    assert (stats.files_indexed, stats.blocks) == (1, 2)
    assert names(idx, "fresh name handler")[0] == ("svc.py", "fresh_name_handler")
    assert all(n != "old_name_handler" for _, n in names(idx, "old name handler"))


def test_deleted_and_renamed_files_leave_the_results(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "gone.py", "def vanishing_symbol():\n    pass\n")
    write(repo, "old/place.py", "def wandering_symbol():\n    pass\n")
    idx = open_index(repo)
    idx.update()
    (repo / "gone.py").unlink()
    (repo / "new").mkdir()
    (repo / "old" / "place.py").rename(repo / "new" / "place.py")
    stats = idx.update()
    assert stats.files_removed == 2 and stats.files_indexed == 1
    assert idx.search("vanishing") == []
    assert names(idx, "wandering symbol") == [("new/place.py", "wandering_symbol")]
    assert idx.status()["files"] == 1


def test_update_file_indexes_unsaved_text_not_the_disk(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "editor.py", "def on_disk_version():\n    return 1\n")
    idx = open_index(repo)
    idx.update()
    count = idx.update_file("editor.py", "def in_buffer_version():\n    return 2\n")
    assert count == 1
    assert names(idx, "in buffer version") == [("editor.py", "in_buffer_version")]
    assert idx.search("disk") == []
    # The next scan re-checks the disk (the buffer was never saved).
    idx.update()
    assert names(idx, "on disk version") == [("editor.py", "on_disk_version")]
    assert idx.search("buffer") == []


def test_update_file_from_disk_and_remove_file(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    idx = open_index(repo)
    idx.update()
    write(repo, "pkg/new_mod.py", "class FreshlyAddedWidget:\n    pass\n")
    assert idx.update_file(repo / "pkg" / "new_mod.py") == 1
    assert names(idx, "FreshlyAddedWidget")[0] == ("pkg/new_mod.py", "FreshlyAddedWidget")
    idx.remove_file("pkg/new_mod.py")
    assert idx.search("FreshlyAddedWidget") == []


def test_update_file_refuses_paths_outside_the_root(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    idx = open_index(repo)
    with pytest.raises(PathOutsideRoot) as info:
        idx.update_file("../elsewhere.py", "x = 1\n")
    assert info.value.exit_code == 2 and info.value.hint
    (repo / "escape.py").symlink_to("/etc/hostname")
    with pytest.raises(PathOutsideRoot):
        idx.update_file("escape.py")
    (repo / "folder.py").mkdir()
    assert idx.update_file("folder.py") == 0  # not a file: nothing indexed, no error


def test_gitignore_is_honoured(repo: Path, open_index: Callable[..., Index]) -> None:
    write(repo, ".gitignore", "generated/\n*.tmp.py\n")
    write(repo, "src/keep.py", "def kept_symbol():\n    pass\n")
    write(repo, "generated/out.py", "def ignored_folder_symbol():\n    pass\n")
    write(repo, "src/scratch.tmp.py", "def ignored_pattern_symbol():\n    pass\n")
    write(repo, "src/.gitignore", "local_only.py\n")
    write(repo, "src/local_only.py", "def nested_ignore_symbol():\n    pass\n")
    write(repo, "node_modules/lib/index.js", "function vendoredThing() {}\n")
    write(repo, "dist/bundle.py", "def built_output_symbol():\n    pass\n")
    write(repo, "src/build/steps.py", "def build_step_symbol():\n    pass\n")  # deeper: source
    idx = open_index(repo)
    stats = idx.update()
    assert stats.files_seen == 2
    assert idx.search("build_step_symbol", 1)[0].path == "src/build/steps.py"
    assert idx.update_file("dist/bundle.py") == 0
    for query in (
        "ignored_folder_symbol",
        "ignored_pattern_symbol",
        "nested_ignore_symbol",
        "vendoredThing",
    ):
        assert all(h.name in ("kept_symbol", "build_step_symbol") for h in idx.search(query)), query
    assert idx.update_file("generated/out.py") == 0  # one-file updates obey the same rules


def test_an_edited_gitignore_applies_to_the_next_one_file_update(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, ".gitignore", "*.tmp.py\n")
    write(repo, "src/notes.py", "def noted_symbol():\n    pass\n")
    idx = open_index(repo)
    idx.update()
    assert idx.update_file("src/notes.py") == 1
    write(repo, ".gitignore", "*.tmp.py\nnotes.py\n")  # compiled patterns are cached per file
    assert idx.update_file("src/notes.py") == 0
    write(repo, "src/.gitignore", "!notes.py\n")  # a new .gitignore deeper down is read too
    (repo / ".gitignore").unlink()
    assert idx.update_file("src/notes.py") == 1


def test_binaries_minified_and_generated_files_are_skipped(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    (repo / "blob.py").write_bytes(b"def binary_thing():\x00\x01\x02 pass\n")
    write(repo, "bundle.js", "function minifiedThing(){return 1};" * 400)
    write(
        repo,
        "pb.py",
        "# Code generated by protoc. DO NOT EDIT.\ndef generated_thing():\n    pass\n",
    )
    (repo / "huge.py").write_text("x = 1\n" * 300_000)
    idx = open_index(repo)
    idx.update()
    assert idx.status()["blocks"] == 0
    for query in ("binary thing", "minifiedThing", "generated thing"):
        assert idx.search(query) == []


def test_status_reports_counts(repo: Path, open_index: Callable[..., Index]) -> None:
    write(repo, "m.py", "A = 1\n\n\ndef f():\n    return A\n")
    idx = open_index(repo)
    idx.update()
    status = idx.status()
    assert (status["files"], status["blocks"]) == (1, 2)
    assert status["db_bytes"] > 0 and status["last_indexed"] > 0


def test_unchanged_blocks_follow_their_lines_after_an_edit_above(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    source = "def first_block():\n    return 1\n\n\ndef second_block():\n    return 2\n"
    write(repo, "lines.py", source)
    idx = open_index(repo)
    idx.update()
    idx.update_file(
        "lines.py", "import os\nimport sys\n\n\n" + source.replace("return 1", "return 10")
    )
    second = idx.search("second_block", 1)[0]
    assert (second.name, second.start_line, second.end_line) == ("second_block", 9, 10)
    first = idx.search("first_block", 1)[0]
    assert (first.start_line, "return 10" in first.text) == (5, True)
    assert idx.status()["blocks"] == 3


def test_update_file_in_one_thread_while_another_searches(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    import threading

    write(repo, "live.py", "def live_version_0():\n    pass\n")
    idx = open_index(repo)
    idx.update()
    errors: list[BaseException] = []
    done = threading.Event()

    def searcher() -> None:
        try:
            while not done.is_set():
                for hit in idx.search("live version", 5):
                    assert hit.path == "live.py"
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    thread = threading.Thread(target=searcher)
    thread.start()
    try:
        for i in range(1, 40):
            idx.update_file("live.py", f"def live_version_{i}():\n    pass\n")
    finally:
        done.set()
        thread.join(10)
    assert errors == []
    assert [h.name for h in idx.search("live_version_39")] == ["live_version_39"]
    assert idx.status()["blocks"] == 1


def test_a_block_pasted_twice_is_searchable_in_both_places(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    steps = "".join(f"    step_{i} = stage({i}, user)\n" for i in range(12))
    body = f"def refresh(user):\n{steps}    return loadUserProfile(user)\n"  # big: not merged
    write(repo, "app.py", body)
    idx = open_index(repo)
    idx.update()
    idx.update_file("app.py", body + "\n\n" + body)  # the copy's text is already indexed
    hits = idx.search("profile", 5)  # "profile" is only a camelCase part, never a whole word
    assert sorted(h.start_line for h in hits) == [1, 17]
