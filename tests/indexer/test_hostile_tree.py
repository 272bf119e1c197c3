"""A hostile or just odd checkout through the real `kiln index` / `kiln search` (docs/security.md,
"The code index"): names no protocol can carry, files that block or never end where a
``.gitignore`` or a source file should be, names that would forge lines of the output. Each
ends in one line on stderr and a usable index, never a traceback or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from indexer import Index
from tests.child_signals import as_from_a_terminal

from .conftest import write

pytestmark = pytest.mark.e2e

# A bound for a run that would otherwise block forever (a FIFO) or read forever (/dev/zero):
# the test fails with TimeoutExpired instead of hanging the suite. Not a speed assertion.
HANG = 60


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=HANG,
        env={**os.environ, "KILN_HOME": str(cwd.parent / "home")},
    )  # fmt: skip


def clean(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_a_name_that_is_not_utf8_is_skipped_with_one_line(repo: Path) -> None:
    write(repo, "ok.py", "def plain_symbol():\n    pass\n")
    (repo / os.fsdecode(b"caf\xe9\xff.py")).write_text("def latin_name_symbol():\n    pass\n")
    (repo / os.fsdecode(b"d\xff")).mkdir()
    (repo / os.fsdecode(b"d\xff") / "inner.py").write_text("def inner_symbol():\n    pass\n")
    result = kiln("index", ".", cwd=repo)
    clean(result)
    skipped = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert skipped == [
        "kiln: skipped caf\\xe9\\xff.py: file name is not valid UTF-8",
        "kiln: skipped d\\xff: file name is not valid UTF-8",
    ]
    hits = json.loads(kiln("search", "plain_symbol", "--json", cwd=repo).stdout)
    assert [h["path"] for h in hits] == ["ok.py"]
    clean(kiln("index", ".", cwd=repo))  # a re-run is as clean


def test_a_name_with_a_newline_cannot_forge_a_line_of_the_output(repo: Path) -> None:
    forged = "x.py:1-2  function real_one  (9.9)\n    def real_one()\nz.py"
    write(repo, forged, "def forged_name():\n    pass\n")
    write(repo, "tab\tand-dash/-rf.py", "def dashed_name():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    result = kiln("search", "forged_name", "-k", "1", cwd=repo)
    clean(result)
    assert result.stdout.splitlines() == [
        "x.py:1-2  function real_one  (9.9)\\n    def real_one()\\nz.py:1-2  function forged_name"
        + result.stdout.splitlines()[0].split("forged_name", 1)[1],
        "    def forged_name()",
    ]
    hits = json.loads(kiln("search", "forged_name", "--json", "-k", "1", cwd=repo).stdout)
    assert hits[0]["path"] == forged  # JSON carries the real name
    hits = json.loads(kiln("search", "dashed_name", "--json", "-k", "1", cwd=repo).stdout)
    assert hits[0]["path"] == "tab\tand-dash/-rf.py"


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
def test_a_gitignore_that_blocks_or_never_ends_is_read_bounded(repo: Path, kind: str) -> None:
    write(repo, "keep.py", "def kept_symbol():\n    pass\n")
    write(repo, "sub/ignored.py", "def ignored_symbol():\n    pass\n")
    ignore = repo / "sub" / ".gitignore"
    if kind == "fifo":
        os.mkfifo(ignore)  # open() for reading waits for a writer forever
    elif kind == "dev-zero":
        ignore.symlink_to("/dev/zero")  # read() never ends
    else:  # over the cap: the patterns of the first MB count
        ignore.write_text("ignored.py\n" + "# filler\n" * 200_000)
    clean(kiln("index", ".", cwd=repo))
    hits = json.loads(kiln("search", "kept_symbol ignored_symbol", "--json", cwd=repo).stdout)
    paths = {h["path"] for h in hits}
    assert "keep.py" in paths
    assert ("sub/ignored.py" in paths) == (kind != "huge")


def _fifo_update(root: Path, script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (with ``idx``, ``root`` and ``os`` bound) in a child bounded by HANG."""
    code = (
        "import os, sys\nfrom pathlib import Path\nfrom indexer import Index\n"
        f"root = Path({str(root)!r})\nidx = Index(root)\n{script}\nidx.close()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG
    )


def test_a_fifo_swapped_in_after_the_listing_is_skipped_not_waited_on(repo: Path) -> None:
    for i in range(4):
        write(repo, f"s{i}.py", f"def steady_{i}():\n    pass\n")
    script = """
def progress(done, total, path):
    if done == 1:
        (root / "s2.py").unlink()
        os.mkfifo(root / "s2.py")
stats = idx.update(progress)
print(stats.files_indexed, stats.skipped)
"""
    result = _fifo_update(repo, script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3 ['s2.py: not a regular file (a FIFO)']"
    idx = Index(repo)
    try:
        assert idx.search("steady_3")[0].name == "steady_3"
        assert all(h.name != "steady_2" for h in idx.search("steady_2"))
    finally:
        idx.close()


def test_a_single_file_update_of_a_fifo_or_device_removes_it(repo: Path) -> None:
    """What the watcher and the editor's didSave/didClose do for one path."""
    write(repo, "p.py", "def piped_symbol():\n    pass\n")
    write(repo, "z.py", "def zeroed_symbol():\n    pass\n")
    idx = Index(repo)
    idx.update()
    idx.close()
    (repo / "p.py").unlink()
    os.mkfifo(repo / "p.py")
    (repo / "z.py").unlink()
    os.mknod(repo / "z.py", 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero's device
    result = _fifo_update(repo, "print(idx.update_file('p.py'), idx.update_file('z.py'))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0 0"
    idx = Index(repo)
    try:
        assert all(h.path not in ("p.py", "z.py") for h in idx.search("piped_symbol zeroed_symbol"))
    finally:
        idx.close()


def test_watch_goes_on_past_a_name_that_is_not_utf8(repo: Path) -> None:
    import select
    import signal

    write(repo, "ok.py", "def first_symbol():\n    pass\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "index", "--watch", "--json", "."],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=as_from_a_terminal,
    )  # fmt: skip

    def line() -> dict:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], HANG)
        assert ready, "no output from kiln index --watch"
        return json.loads(proc.stdout.readline())

    try:
        assert line()["total_files"] == 1
        assert line()["event"] == "watching"
        # one batch: the odd name sorts first, and used to end the batch before good.py
        (repo / os.fsdecode(b"a\xff.py")).write_text("def odd_symbol():\n    pass\n")
        os.mkfifo(repo / "b_pipe.py")
        (repo / "c_link.py").symlink_to("/etc/hostname")  # leads outside: refused, batch goes on
        write(repo, "good.py", "def late_symbol():\n    pass\n")
        batch = line()
        while "good.py" not in batch["paths"]:
            batch = line()
        assert batch["event"] == "batch"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=HANG)
    assert proc.returncode == 0 and "Traceback" not in (proc.stderr.read() if proc.stderr else "")
    found = json.loads(kiln("search", "late_symbol", "--json", cwd=repo).stdout)
    assert found[0]["name"] == "late_symbol"


def test_oversized_minified_binary_and_generated_content_stays_out(repo: Path) -> None:
    """The limits docs/security.md states, whatever the file is called."""
    write(repo, "ok.py", "def normal_symbol():\n    pass\n")
    (repo / "bundle.py").write_text("def minified_symbol(): pass;" * 750_000)  # ~20 MB, one line
    (repo / "long.py").write_text("def wide_symbol(): pass;" * 200 + "\n" * 10)  # 4.8 kB, minified
    lines = "".join(f"def big_symbol_{n}(value):\n    return value\n" for n in range(30_000))
    assert len(lines) > 1_000_000
    (repo / "big.py").write_text(lines)
    (repo / "blob.py").write_bytes(b"def binary_symbol():\n    pass\n\x00\x01\x02")
    (repo / "gen.py").write_text("# @generated\ndef generated_symbol():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    for word in ("minified_symbol", "wide_symbol", "big_symbol_7", "binary_symbol"):
        hits = json.loads(kiln("search", word, "--json", cwd=repo).stdout)
        assert all(h["name"] != word for h in hits), (word, hits)
    hits = json.loads(kiln("search", "generated_symbol", "--json", cwd=repo).stdout)
    assert all(h["name"] != "generated_symbol" for h in hits)
    assert (
        json.loads(kiln("search", "normal_symbol", "--json", cwd=repo).stdout)[0]["path"] == "ok.py"
    )


def test_definitions_nested_a_hundred_thousand_deep_are_indexed_in_bounded_time(
    repo: Path,
) -> None:
    """Under the 1 MB cap, with short lines (not minified): ``fn deep(){`` nested 70,000 deep.
    Reaching each definition's neighbours walked the tree from its root, so each file held
    `kiln index` for minutes (quadratic in the depth). Definitions deeper than
    ``MAX_START_DEPTH`` stay in the text of the block around them."""
    (repo / "deep.rs").write_text("fn deep(){\n" * 70_000 + "}\n" * 70_000)
    (repo / "deep.js").write_text("function deep(){\n" * 50_000 + "}\n" * 50_000)
    assert max((repo / name).stat().st_size for name in ("deep.rs", "deep.js")) <= 1_000_000
    write(repo, "ok.rs", "fn plain_symbol() {}\n")
    clean(kiln("index", ".", cwd=repo))
    hits = json.loads(kiln("search", "plain_symbol", "--json", cwd=repo).stdout)
    assert hits[0]["path"] == "ok.rs", hits
    paths = {h["path"] for h in json.loads(kiln("search", "deep", "--json", cwd=repo).stdout)}
    assert {"deep.rs", "deep.js"} <= paths, paths


def test_a_gitignore_pattern_that_backtracks_is_dropped(repo: Path) -> None:
    """``*a*a*a...`` becomes a regular expression that backtracks for hours on a long name."""
    write(repo, ".gitignore", "*a" * 12 + "zz\nskipped_*.py\n")
    write(repo, "a" * 200 + ".py", "def long_named_symbol():\n    pass\n")
    write(repo, "skipped_one.py", "def ignored_symbol():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    hits = json.loads(kiln("search", "long_named_symbol", "--json", cwd=repo).stdout)
    assert hits[0]["name"] == "long_named_symbol"
    hits = json.loads(kiln("search", "ignored_symbol", "--json", cwd=repo).stdout)
    assert all(h["path"] != "skipped_one.py" for h in hits)  # the other patterns still count


@pytest.mark.parametrize("negated", ["", "!"])
def test_a_gitignore_pattern_of_many_double_stars_is_dropped(repo: Path, negated: str) -> None:
    """Each ``**`` becomes ``(?:/.+)?`` and the expression tries every way to split a path among
    them: eight took 34 s on one file 40 folders deep, ten hold `kiln index` for hours. Two
    before a last ``/**`` still count."""
    write(repo, ".gitignore", f"{negated}{'**/a/' * 10}zz\n**/a/**/gone/**\n")
    deep = "/".join(["a"] * 40)
    write(repo, f"{deep}/deep.py", "def deep_symbol():\n    pass\n")
    write(repo, "a/gone/x/ignored.py", "def ignored_symbol():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    hits = json.loads(kiln("search", "deep_symbol", "--json", cwd=repo).stdout)
    assert hits[0]["path"] == f"{deep}/deep.py"
    hits = json.loads(kiln("search", "ignored_symbol", "--json", cwd=repo).stdout)
    assert all(h["name"] != "ignored_symbol" for h in hits)


def test_only_the_first_2000_gitignore_patterns_count(repo: Path) -> None:
    """docs/security.md: each pattern is tried on every file, so a `.gitignore` counts its first
    2,000 patterns; the 2,000th still ignores, the 2,001st does not (more is indexed, never less)."""
    patterns = [f"nomatch{i}.py" for i in range(1999)] + ["last_counted.py", "past_the_cap.py"]
    write(repo, ".gitignore", "\n".join(patterns) + "\n")
    write(repo, "last_counted.py", "def counted_symbol():\n    pass\n")
    write(repo, "past_the_cap.py", "def uncounted_symbol():\n    pass\n")
    clean(kiln("index", ".", cwd=repo))
    uncounted = json.loads(kiln("search", "uncounted_symbol", "--json", cwd=repo).stdout)
    assert uncounted and uncounted[0]["path"] == "past_the_cap.py", uncounted
    counted = json.loads(kiln("search", "counted_symbol", "--json", cwd=repo).stdout)
    assert all(h["path"] != "last_counted.py" for h in counted), counted


def test_a_file_replaced_by_a_link_outside_after_the_listing_is_not_read(
    repo: Path, tmp_path: Path
) -> None:
    """The listing saw a regular file; by the read it is a link to a secret of the user's."""
    secret = tmp_path / "id_secret.py"
    secret.write_text("def leaked_secret_symbol():\n    pass\n")
    for i in range(4):
        write(repo, f"s{i}.py", f"def steady_{i}():\n    pass\n")
    script = f"""
def progress(done, total, path):
    if done == 1:
        (root / "s2.py").unlink()
        (root / "s2.py").symlink_to({str(secret)!r})
stats = idx.update(progress)
print(stats.files_indexed, stats.skipped)
(root / "s3.py").unlink()
(root / "s3.py").symlink_to({str(secret)!r})
try:
    idx.update_file("s3.py")
except Exception as exc:
    print(type(exc).__name__)
"""
    result = _fifo_update(repo, script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "3 ['s2.py: leads outside the workspace']",
        "PathOutsideRoot",  # one-file updates refuse it by name, as before
    ]
    idx = Index(repo)
    try:
        assert all(h.name != "leaked_secret_symbol" for h in idx.search("leaked_secret_symbol"))
        assert idx.search("steady_1")[0].name == "steady_1"
    finally:
        idx.close()


def _chain(root: Path, depth: int) -> str:
    """``a/a/…/a`` ``depth`` folders under ``root`` (``os.makedirs`` recurses per level)."""
    folder = str(root)
    for _ in range(depth):
        folder += "/a"
        os.mkdir(folder)
    return "/".join(["a"] * depth)


def _unchain(root: Path, depth: int) -> None:
    """pytest's clean-up of old temporary folders recurses per level: take the chain down
    from its bottom (see tests/security/test_deep_folders.py)."""
    for level in range(depth, 0, -1):
        folder = str(root) + "/a" * level
        for entry in os.scandir(folder):
            if not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
        os.rmdir(folder)


def test_folders_past_the_depth_bound_are_left_out_with_one_line(repo: Path) -> None:
    """A file 1,500 folders deep (a 3 kB path, under the path bound) and an ignore pattern of
    two ``**``: matching costs the square of the depth at each folder on the way, which held
    `kiln index` for 11-17 s. Folders 64 levels down are walked, the 65th is said once and
    left out with all below it; an editor's one-file update there is refused the same way."""
    write(repo, ".gitignore", "**/a/**/zz\n")
    write(repo, "top.py", "def top_symbol():\n    pass\n")
    deep = _chain(repo, 1500)
    try:
        for level, name in ((40, "forty"), (64, "last"), (65, "past"), (1500, "bottom")):
            rel = "/".join(["a"] * level) + f"/{name}.py"
            write(repo, rel, f"def {name}_symbol():\n    pass\n")
        result = kiln("index", ".", cwd=repo)
        clean(result)
        too_deep = "/".join(["a"] * 65) + "/: more than 64 folders deep"
        assert [line for line in result.stderr.splitlines() if "skipped" in line] == [
            f"kiln: skipped {too_deep}"
        ]
        hits = json.loads(kiln("search", "symbol", "--json", "-k", "10", cwd=repo).stdout)
        assert sorted(h["name"] for h in hits) == ["forty_symbol", "last_symbol", "top_symbol"]
        again = kiln("index", ".", "--json", cwd=repo)
        clean(again)
        assert json.loads(again.stdout)["skipped_before"] == [too_deep]
        result = _fifo_update(repo, f"print(idx.update_file({deep + '/bottom.py'!r}))")
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "0"
        hits = json.loads(kiln("search", "bottom_symbol", "--json", cwd=repo).stdout)
        assert all(h["name"] != "bottom_symbol" for h in hits)
    finally:
        _unchain(repo, 1500)
