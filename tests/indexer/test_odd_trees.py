"""Odd checkouts through the real `kiln index` / `kiln search`: ignore files that bring files
back, folders and links the index cannot follow, files too big or not source at all. Each
skip is one line on stderr, and the search answers what the files on disk hold."""

from __future__ import annotations

import json
import os
import queue
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index
from tests.child_signals import as_from_a_terminal
from tests.waiting import wait_until

from .conftest import write
from .test_hostile_tree import HANG, clean, kiln

pytestmark = pytest.mark.e2e


def found(repo: Path, word: str) -> list[str]:
    """The paths of the blocks named ``word`` that `kiln search` finds."""
    hits = json.loads(kiln("search", word, "--json", cwd=repo).stdout)
    return [h["path"] for h in hits if h["name"] == word]


def test_a_nested_gitignore_brings_back_what_one_above_ignored(repo: Path) -> None:
    """Git: the deepest `.gitignore` with a matching pattern decides. A folder's
    `!settings_local.py` was overruled by the root's `settings_*.py`: the file git tracks was
    missing from the index, in a full run and in a one-file update alike."""
    write(repo, ".gitignore", "settings_*.py\n")
    write(repo, "settings_dev.py", "def dev_setting():\n    pass\n")
    write(repo, "app/.gitignore", "!settings_local.py\n")
    write(repo, "app/settings_local.py", "def local_setting():\n    pass\n")
    write(repo, "app/settings_prod.py", "def prod_setting():\n    pass\n")
    write(repo, "app/deep/.gitignore", "settings_local.py\n")  # and deeper still, ignored again
    write(repo, "app/deep/settings_local.py", "def deep_setting():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    assert found(repo, "local_setting") == ["app/settings_local.py"]
    for word in ("dev_setting", "prod_setting", "deep_setting"):
        assert found(repo, word) == [], word
    write(repo, "app/settings_local.py", "def local_setting_edited():\n    pass\n")
    with Index(repo) as idx:
        assert idx.update_file("app/settings_local.py") == 1
        assert idx.update_file("app/deep/settings_local.py") == 0


def test_what_the_listing_leaves_out_is_one_line_each(repo: Path, tmp_path: Path) -> None:
    """A link leading outside the root and a file over the 1 MB cap were left out without a
    word (a search just missed them); each is now one line. An ignored link says nothing."""
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, "shared.py", "def shared_symbol():\n    pass\n")
    write(repo, ".gitignore", "bazel-out\n")
    write(repo, "ok.py", "def normal_symbol():\n    pass\n")
    (repo / "shared").symlink_to(elsewhere)
    (repo / "bazel-out").symlink_to(elsewhere)
    (repo / "one.py").symlink_to(elsewhere / "shared.py")
    (repo / "big.py").write_text("def big_symbol():\n    pass\n" * 40_000)
    result = kiln("index", ".", cwd=repo)
    clean(result)
    assert result.stderr.splitlines() == [
        "kiln: skipped big.py: larger than 1,000,000 bytes (1,080,000)",
        "kiln: skipped one.py: the link leads outside the workspace",
        "kiln: skipped shared/: the link leads outside the workspace",
    ]
    assert found(repo, "normal_symbol") == ["ok.py"]
    assert found(repo, "shared_symbol") == found(repo, "big_symbol") == []


def test_a_folder_that_cannot_be_read_is_one_line(repo: Path) -> None:
    """A folder without read permission was skipped without a word."""
    write(repo, "ok.py", "def normal_symbol():\n    pass\n")
    write(repo, "locked/inside.py", "def locked_symbol():\n    pass\n")
    (repo / "locked").chmod(0)
    # root reads any folder: drop the capabilities that let it, as a user has none of them
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("root without setpriv reads every folder")
    result = subprocess.run(
        [*(drop if os.geteuid() == 0 else []), sys.executable, "-m", "lsp_server", "index", "."],
        cwd=repo, capture_output=True, text=True, timeout=HANG,
        env={**os.environ, "KILN_HOME": str(repo.parent / "home")},
    )  # fmt: skip
    (repo / "locked").chmod(0o755)
    clean(result)
    assert result.stderr.splitlines() == [
        "kiln: skipped locked/: cannot read the folder (Permission denied)"
    ]
    assert found(repo, "normal_symbol") == ["ok.py"]


def test_a_git_lfs_pointer_is_not_indexed_as_source(repo: Path) -> None:
    """A checkout made without `git lfs pull` holds three-line pointers where the files
    should be; `schema.py` was indexed as a module holding `oid sha256:…`, and the agent's
    search found the pointer, not the code. It is skipped with one line, then counted as
    skipped before on the next run (README: a later run counts what an earlier one left out)."""
    pointer = (
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
        "size 12345\n"
    )
    write(repo, "schema.py", pointer)
    write(repo, "ok.py", "def normal_symbol():\n    pass\n")
    first = kiln("index", ".", cwd=repo)
    clean(first)
    assert first.stderr.splitlines() == [
        "kiln: skipped schema.py: a Git LFS pointer, not its content (run git lfs pull)"
    ]
    assert json.loads(kiln("search", "oid sha256 spec", "--json", cwd=repo).stdout) == []
    again = kiln("index", ".", cwd=repo)
    clean(again)
    assert again.stderr.splitlines() == [
        "kiln: 1 file skipped as before (`kiln index --verbose` lists them)"
    ]
    with Index(repo) as idx:
        assert idx.update_file("schema.py") == 0  # a one-file update (watcher, save) too
        assert idx.search("oid sha256 spec") == []


def test_a_full_disk_is_one_line_naming_the_index_and_the_next_run_resumes(repo: Path) -> None:
    """Out of space (here a file-size limit, which SQLite meets as an I/O error; a full disk
    reads "database or disk is full"): `kiln: database error: disk I/O error`, naming neither
    the file nor a remedy. Now one line naming index.db and what to do; the next run, with
    room, finishes the index."""
    for d in range(10):
        for f in range(200):
            write(repo, f"p{d}/m{f}.py", f"def func_{d}_{f}(alpha):\n    return alpha + {f}\n")
    limit = (  # 400 kB a file: room for the empty index, not for 2,000 files' rows
        "import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, 400_000));"
        " os.execv(sys.executable, [sys.executable, '-m', 'lsp_server', 'index', '.'])"
    )
    limited = subprocess.run(
        [sys.executable, "-c", limit], cwd=repo, capture_output=True, text=True, timeout=HANG,
        env={**os.environ, "KILN_HOME": str(repo.parent / "home")},
    )  # fmt: skip
    assert limited.returncode == 1, limited.stderr
    db = repo / ".kiln" / "index.db"
    assert limited.stderr.splitlines() == [
        f"kiln: cannot write {db}: disk I/O error"
        " (free space on the disk that holds it, then run `kiln index` again)"
    ]
    clean(kiln("index", ".", cwd=repo))
    assert found(repo, "func_9_199") == ["p9/m199.py"]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM files").fetchone() == (2000,)
    finally:
        conn.close()


def _events(proc: subprocess.Popen[str]) -> Callable[[], dict]:
    """The next JSON line of `kiln index --watch --json`, each waited for with a bound (a
    hang fails the test instead of the suite; not a timing). Read on a thread: lines that
    arrive together sit in the reader's buffer, where a select() would not see them."""
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or []], daemon=True).start()
    return lambda: dict(json.loads(lines.get(timeout=HANG)))


def test_kiln_index_watch_says_what_it_skips_once(repo: Path, tmp_path: Path) -> None:
    """`kiln index --watch` said nothing of a file it left out after the first run (a link
    out of the tree, a file over the cap, an LFS pointer): each is now one line, once."""
    write(repo, "ok.py", "def normal_symbol():\n    pass\n")
    (repo / "early").symlink_to(tmp_path)  # said by the first run, and not again
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "index", "--watch", "--json"],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "KILN_HOME": str(repo.parent / "home")},
        preexec_fn=as_from_a_terminal,
    )  # fmt: skip
    event = _events(proc)
    try:
        assert event()["total_files"] == 1
        assert event()["event"] == "watching"
        (repo / "out.py").symlink_to(tmp_path / "elsewhere.py")
        (tmp_path / "elsewhere.py").write_text("def outside_symbol():\n    pass\n")
        (repo / "big.py").write_text("def big_symbol():\n    pass\n" * 40_000)
        write(repo, "lfs.py", "version https://git-lfs.github.com/spec/v1\noid sha256:aa\n")
        os.mkdir(repo / "later")  # a folder: a full scan, which lists every skip again
        seen: set[str] = set()
        while not {"out.py", "big.py", "lfs.py", "later"} <= seen:
            seen.update(event().get("paths", []))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=HANG)
    assert proc.stderr is not None
    err = proc.stderr.read()  # a few lines: the pipe never filled
    assert proc.returncode == 0, err
    assert sorted(err.splitlines()) == [
        "kiln: skipped big.py: larger than 1,000,000 bytes (1,080,000)",
        "kiln: skipped early/: the link leads outside the workspace",
        "kiln: skipped lfs.py: a Git LFS pointer, not its content (run git lfs pull)",
        "kiln: skipped out.py: the link leads outside the workspace",
    ], err


def test_a_byte_order_mark_is_not_part_of_a_signature(repo: Path) -> None:
    """Files saved on Windows often start with a byte order mark; the first block's
    signature kept it and `kiln search` showed `\\ufeffpublic class Order`."""
    bom = b"\xef\xbb\xbf"
    (repo / "Order.cs").write_bytes(
        bom + b"public class Order\n{\n    public int Id() { return 1; }\n}\n"
    )
    (repo / "setup.py").write_bytes(bom + b"import os\nVERSION = os.environ['V']\n")
    (repo / "NOTES.txt").write_bytes(bom + b"Release notes\n")
    clean(kiln("index", ".", cwd=repo))
    hits = json.loads(kiln("search", "Order", "--json", cwd=repo).stdout)
    assert hits[0]["name"] == "Order"
    shown = kiln("search", "Order", "-k", "1", cwd=repo).stdout.splitlines()
    assert shown[1] == "    public class Order", shown
    for query, line in (
        ("VERSION environ", "    import os"),
        ("Release notes", "    Release notes"),
    ):
        assert kiln("search", query, "-k", "1", cwd=repo).stdout.splitlines()[1] == line, query


def test_ignore_files_and_git_info_exclude_count_as_git_and_search_tools_read_them(
    repo: Path,
) -> None:
    """Only `.gitignore` counted: a folder's `.ignore` (ripgrep's, fd's: what search tools
    skip and git tracks) and the repository's `.git/info/exclude` were indexed, so a search
    answered from files the user had excluded. `.ignore` beats the `.gitignore` beside it."""
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("scratch/\n")
    write(repo, ".gitignore", "*_pb2.py\n")
    write(repo, "scratch/try.py", "def scratch_symbol():\n    pass\n")
    write(repo, "api/.ignore", "fixtures.py\n!api_pb2.py\n")
    write(repo, "api/fixtures.py", "def fixture_symbol():\n    pass\n")
    write(repo, "api/api_pb2.py", "def wire_symbol():\n    pass\n")
    write(repo, "api/other_pb2.py", "def other_wire_symbol():\n    pass\n")
    write(repo, "api/views.py", "def view_symbol():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    assert found(repo, "view_symbol") == ["api/views.py"]
    assert found(repo, "wire_symbol") == ["api/api_pb2.py"]
    for word in ("scratch_symbol", "fixture_symbol", "other_wire_symbol"):
        assert found(repo, word) == [], word
    with Index(repo) as idx:  # one-file updates (the watcher, an editor's save) alike
        assert idx.update_file("scratch/try.py") == idx.update_file("api/fixtures.py") == 0
        assert idx.update_file("api/api_pb2.py") == 1


def test_git_does_not_see_the_index_but_sees_the_projects_kiln_files(
    repo: Path, tmp_path: Path
) -> None:
    """After a first `kiln index`, `git status` listed `.kiln/index.db` (and its -wal/-shm)
    and `git add -A` committed a cache of many MB. The folder now ignores the index and only
    the index: a project's `.kiln/settings.json` is still for git to see. A `.gitignore` the
    project keeps there is left as it is."""
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write(repo, "app.py", "def app_symbol():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    write(repo, ".kiln/settings.json", "{}\n")

    def untracked() -> list[str]:
        status = ["git", "status", "--porcelain", "--untracked-files=all"]
        out = subprocess.run(status, cwd=repo, capture_output=True, text=True, check=True)
        return sorted(line[3:] for line in out.stdout.splitlines())

    assert untracked() == [".kiln/settings.json", "app.py"]
    own = tmp_path / "own"
    write(own, ".kiln/.gitignore", "# the project's own\n")
    write(own, "app.py", "def app_symbol():\n    pass\n")
    clean(kiln("index", ".", cwd=own))
    assert (own / ".kiln" / ".gitignore").read_text() == "# the project's own\n"


def test_a_built_index_on_a_read_only_disk_is_searched(read_only_disk: Path) -> None:
    """A checkout on a read-only mount with its index built: `kiln search` failed with
    "cannot open …/index.db: unable to open database file" (SQLite cannot even read a WAL
    file there). It now searches the index as it is, saying so; `kiln index` still fails
    with one line."""
    repo = read_only_disk / "repo"
    write(repo, "app.py", "def mounted_symbol():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    subprocess.run(["mount", "-o", "remount,ro", str(read_only_disk)], check=True)
    result = kiln("search", "mounted_symbol", "--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert [h["path"] for h in json.loads(result.stdout)] == ["app.py"]
    assert result.stderr == (
        f"kiln: {repo / '.kiln'} is on a read-only disk: searching the index as it is\n"
    )
    again = kiln("index", ".", cwd=repo)
    assert again.returncode == 1 and len(again.stderr.splitlines()) == 1, again.stderr


def test_source_files_that_are_binary_or_minified_are_one_line_each(repo: Path) -> None:
    """A `.py` holding a NUL and a `.js` bundle were recorded as skipped without a word, so
    their functions were missing from searches unexplained. Each is now one line (the next run,
    finding them unchanged, counts them in one line); generated files and data files stay
    quiet."""
    write(repo, "ok.py", "def normal_symbol():\n    pass\n")
    (repo / "blob.py").write_bytes(b"def binary_symbol():\n    pass\n\x00\x01")
    (repo / "bundle.js").write_text("function a(){return 1};" * 400)
    (repo / "fixture.json").write_text('{"k": "' + "x" * 6000 + '"}\n')
    (repo / "schema_pb2.py").write_text("# @generated\ndef generated_symbol():\n    pass\n")
    first = kiln("index", ".", cwd=repo)
    clean(first)
    assert first.stderr.splitlines() == [
        "kiln: skipped blob.py: binary content (a NUL byte in its first 8 kB)",
        "kiln: skipped bundle.js: minified (lines of over 300 bytes on average)",
    ]
    again = kiln("index", ".", cwd=repo)
    clean(again)
    assert again.stderr.splitlines() == [
        "kiln: 2 files skipped as before (`kiln index --verbose` lists them)"
    ]
    assert found(repo, "binary_symbol") == []


def test_kiln_index_watch_says_when_a_batch_fails(repo: Path) -> None:
    """A batch the index could not take (here the disk's room runs out: a file-size limit)
    was kept in the watcher and never shown: `kiln index --watch` went on in silence while
    the index fell behind the disk. It is now one line on stderr; and once there is room the
    batch is written (it was dropped: the file stayed out until it changed again)."""
    write(repo, "a.py", "def small_symbol():\n    pass\n")
    limit = (  # 400 kB a file: room for the first run, not for the rows of the file below
        "import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, -1));"
        " os.execv(sys.executable, [sys.executable, '-m', 'lsp_server', 'index', '--watch'])"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", limit], cwd=repo, stderr=subprocess.PIPE, text=True,
        stdout=subprocess.DEVNULL, env={**os.environ, "KILN_HOME": str(repo.parent / "home")},
        preexec_fn=as_from_a_terminal,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr or []], daemon=True).start()
    try:
        assert lines.get(timeout=HANG) == "watching for changes (Ctrl-C to stop)\n"
        body = "".join(f"def grown_{n}(alpha):\n    return alpha * {n}\n" for n in range(12_000))
        write(repo, "big.py", body)
        assert lines.get(timeout=HANG) == (  # the file and what to do (it named neither)
            f"kiln: could not update the index: cannot write {repo / '.kiln' / 'index.db'}:"
            " disk I/O error (free space on the disk that holds it, then run `kiln index` again)\n"
        )
        unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, unlimited)  # room again (-1: no hard cap)
        assert wait_until(lambda: found(repo, "grown_11999") == ["big.py"], timeout=HANG)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=HANG)
