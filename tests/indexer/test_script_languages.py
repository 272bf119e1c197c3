"""Files whose content tells their language (an extensionless script by its ``#!`` line, a
``.m`` file by Objective-C's markers) are recorded with that language in their files row, as
their blocks are: in a full run, from an editor buffer, and in an index written before rows
said so. Then they get what other source files get, such as history votes. Real tree-sitter,
real SQLite, real git."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index, history_votes, language_changes
from indexer import weights as W

from .conftest import write
from .test_history import commit, init
from .test_language_changes import record_digests

SCRIPT = "#!/usr/bin/env bash\nrotate_logs() {\n  logrotate -f /etc/logrotate.conf\n}\n"
OBJC = "#import <Foundation/Foundation.h>\n@implementation Shelf\n- (void)restock {}\n@end\n"
MATLAB = "function x = solve(a)\n  x = a \\ 1;\nend\n"
TOTAL = "#!/bin/sh\nparcel_total() {\n  echo $(( $1 + $2 ))\n}\n"


def _rows(db: Path) -> dict[str, tuple[str, set[str]]]:
    """Per path: the files row's language and its blocks' languages."""
    conn = sqlite3.connect(db)
    try:
        out = {}
        for file_id, path, language in conn.execute("SELECT id, path, language FROM files"):
            blocks = conn.execute("SELECT language FROM blocks WHERE file_id = ?", (file_id,))
            out[path] = (language, {b[0] for b in blocks})
        return out
    finally:
        conn.close()


def _tree(repo: Path) -> None:
    write(repo, "bin/rotate-logs", SCRIPT)
    write(repo, "Sources/Shelf.m", OBJC)
    write(repo, "matlab/solve.m", MATLAB)
    write(repo, "billing.py", "def settle(invoice):\n    return invoice\n")


def test_a_full_run_records_the_language_the_content_tells(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _tree(repo)
    idx = open_index(repo)
    assert idx.update().files_indexed == 4
    rows = _rows(idx.db_path)
    assert rows["bin/rotate-logs"] == ("bash", {"bash"})
    assert rows["Sources/Shelf.m"] == ("objc", {"objc"})
    assert rows["matlab/solve.m"] == ("text", {"text"})  # MATLAB: no grammar
    assert rows["billing.py"] == ("python", {"python"})
    idx.close()
    assert open_index(repo).update().files_indexed == 0


def test_an_editor_buffer_records_the_language_its_text_tells(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "billing.py", "def settle(invoice):\n    return invoice\n")
    idx = open_index(repo)
    idx.update()
    assert idx.update_file(repo / "bin/rotate-logs", SCRIPT) > 0  # unsaved, not on disk
    assert idx.update_file(repo / "Sources/Shelf.m", OBJC) > 0
    rows = _rows(idx.db_path)
    assert rows["bin/rotate-logs"] == ("bash", {"bash"})
    assert rows["Sources/Shelf.m"] == ("objc", {"objc"})
    # the buffer loses its #! line: the row follows
    idx.update_file(repo / "bin/rotate-logs", SCRIPT.split("\n", 1)[1])
    assert _rows(idx.db_path)["bin/rotate-logs"] == ("text", {"text"})


def test_an_existing_index_records_the_language_after_one_update(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _tree(repo)
    idx = open_index(repo)
    idx.update()
    idx.close()
    # as a Kiln whose rows said "text" for these files left it: the rows, and the digest of
    # its table of sniffed files (without ``ROWS``)
    record_digests(
        idx.db_path,
        {language_changes.SHEBANG_KEY: "0123456789abcdef"},
        "UPDATE files SET language = 'text' WHERE path IN ('bin/rotate-logs', 'Sources/Shelf.m')",
    )

    idx = open_index(repo)
    assert idx.update().files_indexed == 3  # the script and both .m files; not billing.py
    rows = _rows(idx.db_path)
    assert rows["bin/rotate-logs"][0] == "bash"
    assert rows["Sources/Shelf.m"][0] == "objc"
    assert rows["matlab/solve.m"][0] == "text"
    idx.close()
    assert open_index(repo).update().files_indexed == 0


def test_a_changed_query_does_not_reread_sniffed_files_of_other_languages(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    _tree(repo)
    idx = open_index(repo)
    idx.update()
    idx.close()
    record_digests(idx.db_path, {"python": "0" * 16})
    assert open_index(repo).update().files_indexed == 1  # billing.py; the "bash" row stays


def test_history_votes_reach_an_extensionless_script(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    init(repo)
    commit(repo, "Add parcel totals", {"bin/bill-total": TOTAL, "bin/ship-total": TOTAL})
    commit(
        repo,
        "Fix rounding of heavy parcel surcharges",
        {"bin/ship-total": TOTAL + "# surcharge rounding\n"},
    )
    idx = open_index(repo)
    idx.update()
    scores = history_votes.file_scores(
        idx._conn, ["surcharges"], {"bin/bill-total", "bin/ship-total"}
    )
    assert scores == {"bin/ship-total": 1.0}
    monkeypatch.setattr(W, "RECENCY_WEIGHT", 0.0)
    query = "parcel total surcharges"
    assert idx.search(query, 2)[0].path == "bin/ship-total"
    monkeypatch.setattr(W, "HISTORY_WEIGHT", 0.0)  # the code alone ties: lower block id first
    assert idx.search(query, 2)[0].path == "bin/bill-total"


def test_an_objective_c_test_names_its_subject(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "Sources/Shelf.m", OBJC.replace("{}", "{\n  [self.items removeAllObjects];\n}"))
    write(
        repo,
        "Tests/ShelfTests.m",
        "#import <XCTest/XCTest.h>\n@interface ShelfTests : XCTestCase\n@end\n"
        "@implementation ShelfTests\n- (void)testRestockEmptiesTheBin {\n  XCTAssert(YES);\n}\n@end\n",
    )
    for i in range(6):  # methods the query's words match better than Shelf's
        write(
            repo,
            f"Sources/Crate{i}.m",
            f"#import <Foundation/Foundation.h>\n@implementation Crate{i}\n"
            f"- (void)restockEmpties {{\n  int flaky = {i};\n}}\n@end\n",
        )
    idx = open_index(repo)
    idx.update()
    hits = idx.search("flaky testRestockEmptiesTheBin", 3)
    assert "Sources/Shelf.m" in [h.path for h in hits]  # the file the test is named after


@pytest.mark.parametrize("script", ["bin/rotate-logs", "bin/rotate_logs", "rotate_logs"])
def test_a_script_without_an_extension_is_its_tests_subject(
    script: str, repo: Path, open_index: Callable[..., Index]
) -> None:
    """``tests/test_rotate_logs.py`` names ``bin/rotate-logs`` (or ``rotate_logs``): a query
    about that test brings the script, which no word of the query names, beside it."""
    write(
        repo,
        script,
        "#!/usr/bin/env python3\nimport sys\n\n\ndef main(argv):\n"
        "    for name in argv:\n        archive(name)\n\n\nmain(sys.argv[1:])\n",
    )
    write(
        repo,
        "tests/test_rotate_logs.py",
        "def test_keeps_seven_days(tmp_path):\n    assert run(tmp_path, days=7) == 7\n",
    )
    for i in range(6):  # functions the query's words match better than the script's
        write(
            repo,
            f"src/keeper{i}.py",
            f"def keeps_seven_days_flaky(days):\n    '''Keeps seven days.'''\n    return {i}\n",
        )
    write(repo, "bin/rotate-logs.md", "Rotate logs: notes, not the script.\n")
    idx = open_index(repo)
    idx.update()
    paths = [h.path for h in idx.search("flaky test_keeps_seven_days", 3)]
    assert "tests/test_rotate_logs.py" in paths
    assert script in paths  # the file the test is named after
    assert "bin/rotate-logs.md" not in paths
