"""Line ends and byte-order marks through the real `kiln index` / `kiln search` and a real
SQLite index: a file saved with classic Mac line ends (``\\r`` alone) or as UTF-16 reads as
its editor shows it. Lines are counted as LSP counts them (``\\n``, ``\\r\\n`` and ``\\r``), the
rule ``kiln lsp`` applies to the buffers it holds (``lsp_server/lsp/textsync.py``), so a hit's
line is the one the editor jumps to, whether the index read the file from disk or a buffer."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from indexer import Index, store
from indexer.pipeline import digest
from indexer.records import EMPTY
from lsp_server.lsp.textsync import lsp_lines

from .test_hostile_tree import clean, kiln

pytestmark = pytest.mark.e2e

# Three functions; the line ends are filled in per test.
SOURCE = [
    "import os",
    "",
    "def first_mac_fn():",
    "    return 1",
    "",
    "",
    "def second_mac_fn():",
    '    """Second."""',
    "    return 2",
    "",
    "def third_mac_fn():",
    "    return 3",
    "",
]


def editor_line(text: str, word: str) -> int:
    """The 1-based line an LSP editor shows ``word`` on."""
    return next(n for n, line in enumerate(lsp_lines(text), 1) if word in line)


def spans(repo: Path, word: str) -> dict[str, tuple[int, int]]:
    hits = json.loads(kiln("search", word, "--json", cwd=repo).stdout)
    return {h["name"]: (h["start_line"], h["end_line"]) for h in hits}


def expected(text: str) -> dict[str, tuple[int, int]]:
    return {
        "first_mac_fn": (editor_line(text, "first_mac_fn"), editor_line(text, "return 1")),
        "second_mac_fn": (editor_line(text, "second_mac_fn"), editor_line(text, "return 2")),
        "third_mac_fn": (editor_line(text, "third_mac_fn"), editor_line(text, "return 3")),
    }


@pytest.mark.parametrize(
    "text",
    [
        "\r".join(SOURCE),  # classic Mac OS
        "\r\n".join(SOURCE),  # Windows
        "\r\n".join(SOURCE[:6]) + "\r" + "\n".join(SOURCE[6:]),  # one of each, as LSP reads it
    ],
    ids=["cr", "crlf", "mixed"],
)
def test_blocks_are_on_the_lines_an_editor_shows(repo: Path, text: str) -> None:
    """A file with `\\r` line ends had every block on line 1 (the index counted `\\n` only)."""
    (repo / "mac.py").write_bytes(text.encode())
    clean(kiln("index", ".", cwd=repo))
    found = spans(repo, "first_mac_fn second_mac_fn third_mac_fn")
    assert {k: found.get(k) for k in expected(text)} == expected(text)
    with Index(repo) as idx:  # the same text as an editor's buffer: the same lines
        idx.update_file("buffer.py", text=text.replace("_mac_fn", "_buf_fn"))
        hits = {h.name: (h.start_line, h.end_line) for h in idx.search("second_buf_fn", 5)}
    assert hits["second_buf_fn"] == expected(text)["second_mac_fn"]


def encoded(text: str, encoding: str) -> bytes:
    if encoding == "utf-16-be":
        return "\ufeff".encode("utf-16-be") + text.encode("utf-16-be")
    if encoding == "utf-16-le":
        return "\ufeff".encode("utf-16-le") + text.encode("utf-16-le")
    return text.encode(encoding)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_file_with_a_byte_order_mark_is_indexed_as_its_text(
    repo: Path, encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A UTF-16 file (Windows tools write them: PowerShell, Visual Studio's resource files) was
    skipped as binary; a UTF-8 one with a BOM had the BOM in its first block's text."""
    monkeypatch.setenv("KILN_HOME", str(repo.parent / "home"))  # `kiln`'s: its key marks it
    text = "\r\n".join(SOURCE).replace("Second.", "Second, café ☕ 𝄞.")
    (repo / "wide.py").write_bytes(encoded(text, encoding))
    result = kiln("index", ".", cwd=repo)
    clean(result)
    assert "skipped" not in result.stderr
    found = spans(repo, "first_mac_fn second_mac_fn third_mac_fn")
    assert {k: found.get(k) for k in expected(text)} == expected(text)
    with Index(repo) as idx:
        (hit,) = [h for h in idx.search("second_mac_fn", 5) if h.name == "second_mac_fn"]
        (pre,) = [h for h in idx.search("import os", 5) if h.path == "wide.py"]
    lines = [line.removesuffix("\r") for line in hit.text.split("\n")]
    assert lines == [line.replace("Second.", "Second, café ☕ 𝄞.") for line in SOURCE[6:9]]
    assert pre.text.startswith("import os")  # no BOM before the first word


def test_utf16_without_a_byte_order_mark_is_still_binary(repo: Path) -> None:
    """Without a BOM, UTF-16 cannot be told from binary data: it stays skipped."""
    (repo / "wide.py").write_bytes("def no_bom_fn():\n    return 1\n".encode("utf-16-le"))
    (repo / "plain.py").write_text("def plain_fn():\n    return 1\n")
    result = kiln("index", ".", cwd=repo)
    clean(result)
    assert "kiln: skipped wide.py: binary content" in result.stderr
    assert "no_bom_fn" not in spans(repo, "no_bom_fn")


def test_an_existing_index_reads_such_files_again(repo: Path) -> None:
    """An index written before these rules kept its `\\r` file on line 1 and its UTF-16 file
    skipped until they changed on disk; opening it re-reads them once (unchanged files only
    have their hash checked)."""
    text = "\r".join(SOURCE)
    (repo / "mac.py").write_bytes(text.encode())
    (repo / "wide.py").write_bytes(encoded(text.replace("_mac_", "_wide_"), "utf-16-le"))
    clean(kiln("index", ".", cwd=repo))
    conn = sqlite3.connect(repo / ".kiln" / "index.db")  # as an older Kiln left it:
    with conn:  # mac.py on line 1, hashed as its bytes; wide.py skipped
        conn.execute("UPDATE block_lines SET start_line = 1, end_line = 1")
        wide = repo / "wide.py"
        old = (wide.stat().st_mtime_ns, wide.stat().st_size, digest(wide.read_bytes()))
        store.write_file(conn, "wide.py", "skipped", *old, EMPTY)
        mac = digest((repo / "mac.py").read_bytes())
        conn.execute("UPDATE files SET hash = ? WHERE path = 'mac.py'", (mac,))
        conn.execute("DELETE FROM meta WHERE key = 'source_text'")
    conn.close()
    assert spans(repo, "second_mac_fn")["second_mac_fn"] == (1, 1)
    assert "second_wide_fn" not in spans(repo, "second_wide_fn")
    clean(kiln("index", ".", cwd=repo))
    assert spans(repo, "second_mac_fn")["second_mac_fn"] == expected(text)["second_mac_fn"]
    assert spans(repo, "second_wide_fn")["second_wide_fn"] == expected(text)["second_mac_fn"]


def test_a_long_file_with_cr_line_ends_is_not_taken_for_minified(repo: Path) -> None:
    """Over 4 kB with `\\r` line ends, a file was one long line to the index and skipped as
    minified (a `.py` said so on stderr): a search never found it."""
    body = "\r".join(f"def mac_fn_{n}(value):\r    return value + {n}\r" for n in range(200))
    (repo / "long.py").write_bytes(body.encode())
    result = kiln("index", ".", cwd=repo)
    clean(result)
    assert "skipped" not in result.stderr
    start = editor_line(body, "mac_fn_150(")
    assert spans(repo, "mac_fn_150")["mac_fn_150"] == (start, start + 1)
