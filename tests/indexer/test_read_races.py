"""A file replaced by a link between the listing and the read (docs/security.md, section 6d):
the listing checked ``notes.py``, a regular file, and the read opened what the name then
named, the user's ``.env`` or a file under a folder the index leaves out, and indexed it under
the listed name. Real files, the real walk and read; the swap made from ``update``'s progress
hook, after the first file is recorded and before the others are read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from indexer import Index

from .conftest import write

SECRET = "racedsecretvalue"
ROUNDS = 2000


def test_a_file_or_folder_swapped_for_a_link_after_the_listing_is_not_read(
    repo: Path, tmp_path: Path
) -> None:
    write(repo, "a.py", "def first_file():\n    pass\n")
    write(repo, "b.py", "def second_file():\n    pass\n")
    write(repo, "pkg/c.py", "def nested_file():\n    pass\n")
    write(repo, "s.py", "def last_file():\n    pass\n")
    write(repo, ".env", f"TOKEN = '{SECRET}1'\n")
    write(repo, "private/c.py", f"TOKEN = '{SECRET}2'\n")
    write(repo, ".gitignore", "private/\n")
    write(tmp_path, "outside.py", f"TOKEN = '{SECRET}3'\n")

    def swap(done: int, total: int, path: str) -> None:
        if done == 1:  # a.py recorded; the others listed, not read yet
            (repo / "b.py").unlink()
            os.symlink(".env", repo / "b.py")
            shutil.rmtree(repo / "pkg")
            os.symlink("private", repo / "pkg")  # a folder on the way, not the name
            (repo / "s.py").unlink()
            os.symlink(tmp_path / "outside.py", repo / "s.py")

    with Index(repo) as idx:
        stats = idx.update(swap)
        for n in "123":
            assert [h.path for h in idx.search(SECRET + n)] == []
        assert [h.path for h in idx.search("first_file")] == ["a.py"]
        assert stats.skipped == ["s.py: leads outside the workspace"]
        assert stats.files_indexed == 1


def test_a_one_file_update_racing_a_link_swap_never_indexes_the_secret(repo: Path) -> None:
    """The editor's and the watcher's update checks the name (``excluded``) and then reads:
    a link swapped in between was followed. Flipped by another process in a tight loop, while
    the file is updated many times over."""
    write(repo, ".env", f"TOKEN = '{SECRET}4'\n")
    write(repo, "spare.py", "def plain_file():\n    pass\n")
    flip = (
        "import os, sys\nos.chdir(sys.argv[1])\nprint('go', flush=True)\n"
        "while True:\n"
        "    os.link('spare.py', 'tmp_copy'); os.replace('tmp_copy', 'b.py')\n"
        "    os.symlink('.env', 'tmp_link'); os.replace('tmp_link', 'b.py')\n"
    )
    flipper = subprocess.Popen(
        [sys.executable, "-c", flip, str(repo)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert flipper.stdout is not None and flipper.stdout.readline() == "go\n"
        with Index(repo) as idx:
            leaked = 0
            for _ in range(ROUNDS):  # each round's write replaces the last: search each
                idx.update_file("b.py")
                leaked += bool(idx.search(SECRET + "4"))
            assert leaked == 0
    finally:
        flipper.kill()
        flipper.wait()
