"""An index written before Kiln knew a language picks its files up on the next update, and
re-parses nothing else: a new grammar (or a changed query) re-chunks that language's files
only, where bumping the chunker version re-chunks every file (``indexer/language_changes``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from indexer import Index, language_changes, store
from indexer.chunker import chunk_file
from indexer.pipeline import digest
from indexer.rows import prepare

from .conftest import FIXTURES, write

PY = 'def settle_invoice(invoice):\n    """Mark an invoice paid."""\n    return invoice\n'


def _tree(repo: Path) -> None:
    write(repo, "billing.py", PY)
    write(repo, "notes.md", "# Notes\n\nShip parcels on Mondays.\n")
    (repo / "Shipping.cs").write_bytes((FIXTURES / "Sample.cs").read_bytes())


def record_digests(db: Path, changes: dict[str, str], *sql: str) -> None:
    """Leave ``db`` as a Kiln with other language digests left it: the recorded digests with
    ``changes`` over them, after the statements ``sql`` (rows as that Kiln wrote them)."""
    recorded = {**language_changes.digests(), **changes}
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for statement in sql:
            conn.execute(statement)
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = ?",
            (json.dumps(recorded), language_changes.META_KEY),
        )
    finally:
        conn.close()


def _as_text(db: Path, repo: Path, rel: str) -> None:
    """Rewrite ``rel``'s rows as a Kiln that did not know its language wrote them: text
    windows, language "text", and no record of the languages."""
    data = (repo / rel).read_bytes()
    st = (repo / rel).stat()
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN")
        blocks = chunk_file(rel, data, "text")
        store.write_file(
            conn, rel, "text", st.st_mtime_ns, st.st_size, digest(data), prepare(rel, blocks)
        )
        conn.execute("DELETE FROM meta WHERE key = ?", (language_changes.META_KEY,))
        conn.execute("COMMIT")
    finally:
        conn.close()


def _languages(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute(
            "SELECT value FROM meta WHERE key = ?", (language_changes.META_KEY,)
        ).fetchone()
        return json.loads(row[0])
    finally:
        conn.close()


def test_a_new_language_reparses_only_its_files(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _tree(repo)
    idx = open_index(repo)
    assert idx.update().files_indexed == 3
    idx.close()
    _as_text(idx.db_path, repo, "Shipping.cs")
    old = Index(repo)
    top = old.search("surcharge for", k=1)[0]
    assert top.kind == "text"  # what the old index held
    old.close()

    idx = open_index(repo)  # this Kiln knows C#
    assert idx.search("surcharge for", k=1)[0].kind == "text"  # kept until the update
    stats = idx.update()
    assert stats.files_indexed == 1  # the C# file; not billing.py, not notes.md
    top = idx.search("surcharge for", k=1)[0]
    assert (top.path, top.kind, top.name) == ("Shipping.cs", "method", "Carrier.SurchargeFor")
    assert _languages(idx.db_path) == language_changes.digests()
    idx.close()
    assert open_index(repo).update().files_indexed == 0  # recorded: nothing more to do


def test_a_changed_query_reparses_its_language_only(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _tree(repo)
    idx = open_index(repo)
    idx.update()
    idx.close()
    # the Python query this index was chunked with differs
    record_digests(idx.db_path, {"python": "0" * 16})
    stats = open_index(repo).update()
    assert stats.files_indexed == 1  # billing.py only


def test_a_new_chunker_version_reparses_every_file(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _tree(repo)
    idx = open_index(repo)
    idx.update()
    idx.close()
    conn = sqlite3.connect(idx.db_path, isolation_level=None)
    conn.execute("UPDATE meta SET value = 'old' WHERE key = 'chunker'")
    conn.execute("DELETE FROM meta WHERE key = ?", (language_changes.META_KEY,))
    conn.close()
    idx = open_index(repo)
    assert idx.update().files_indexed == 3
    assert _languages(idx.db_path) == language_changes.digests()


def test_binary_files_stay_skipped(repo: Path, open_index: Callable[..., Index]) -> None:
    write(repo, "billing.py", PY)
    (repo / "blob.cs").write_bytes(b"\x00\x01binary")
    idx = open_index(repo)
    idx.update()
    idx.close()
    conn = sqlite3.connect(idx.db_path, isolation_level=None)
    assert conn.execute("SELECT language FROM files WHERE path = 'blob.cs'").fetchone() == (
        "skipped",
    )
    conn.execute("DELETE FROM meta WHERE key = ?", (language_changes.META_KEY,))
    conn.close()
    assert open_index(repo).update().files_indexed == 0


def test_files_whose_content_tells_their_language_are_read_again_once(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "billing.py", PY)
    write(
        repo, "bin/rotate-logs", "#!/usr/bin/env bash\nrotate_logs() {\n  logrotate -f /etc/lr\n}\n"
    )
    write(
        repo, "Sources/Shelf.m", "#import <Foundation/Foundation.h>\n@implementation Shelf\n@end\n"
    )
    write(repo, "matlab/solve.m", "function x = solve(a)\n  x = a \\ 1;\nend\n")
    idx = open_index(repo)
    idx.update()
    idx.close()
    for rel in ("bin/rotate-logs", "Sources/Shelf.m"):  # an index from before content counted
        _as_text(idx.db_path, repo, rel)
    idx = open_index(repo)
    assert idx.update().files_indexed == 3  # the script and both .m files; not billing.py
    assert idx.search("shelf", k=1)[0].kind == "class"  # Objective-C
    top = idx.search("rotate logs", k=1)[0]
    assert (top.path, top.kind, top.name) == ("bin/rotate-logs", "function", "rotate_logs")
    idx.close()
    assert open_index(repo).update().files_indexed == 0
