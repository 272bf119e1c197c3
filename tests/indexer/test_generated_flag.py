"""A file's ``generated`` flag (``indexer.generated``): written with its rows on every write
path — a full run, ``update_file`` of the whole file, an edit spliced into one function, a
component's edit — so that a header added or removed at line 1 moves the file's blocks down or
back up on the very next search; and filled in for an index made before the flag."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from indexer import Index
from indexer.schema import MIGRATION_SET

from .conftest import write

QUERY = "strict mode event handlers"
# A registry of rule names, in a function that starts at line 1: it says the query's words
# more often than the handler does, so it ranks first unless it says a generator wrote it.
RULES = (
    "def rule_table():\n"
    "    names = [\n"
    '        "use_strict_mode",\n'
    '        "no_strict_mode_handlers",\n'
    "    ]\n"
    "    # strict mode handlers: strict mode event handlers\n"
    "    return names\n"
)
HANDLERS = 'def check(node):\n    """Event handlers in strict mode."""\n    return node\n'
HEADER_LINE = "# Generated file, do not edit by hand\n"
# The header typed as the function's first body line: inside its block at line 1.
RULES_WITH_HEADER = RULES.replace("    names = [\n", "    " + HEADER_LINE + "    names = [\n")


def flags(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT path, generated FROM files"))
    finally:
        conn.close()


def block_id(db: Path, name: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT id FROM blocks WHERE name = ?", (name,)).fetchone()[0]
    finally:
        conn.close()


def first(idx: Index) -> str:
    return idx.search(QUERY, 2)[0].path


def _indexed(repo: Path, open_index: Callable[..., Index], rules: str) -> Index:
    write(repo, "rules.py", rules)
    write(repo, "handlers.py", HANDLERS)
    idx = open_index(repo)
    idx.update()
    return idx


def test_a_header_typed_into_the_function_at_line_1_counts_on_the_next_search(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    """The incremental path: the edit lands in a function body and is spliced into that
    function's rows (its row id stays), and those rows start at line 1."""
    idx = _indexed(repo, open_index, RULES)
    assert flags(idx.db_path) == {"rules.py": 0, "handlers.py": 0}
    assert first(idx) == "rules.py"
    idx.update_file("rules.py", RULES)  # the editor opens the file: its tree is kept
    row = block_id(idx.db_path, "rule_table")

    idx.update_file("rules.py", RULES_WITH_HEADER)
    assert block_id(idx.db_path, "rule_table") == row  # spliced, not the whole file again
    assert flags(idx.db_path)["rules.py"] == 1
    assert first(idx) == "handlers.py"

    idx.update_file("rules.py", RULES)
    assert block_id(idx.db_path, "rule_table") == row
    assert flags(idx.db_path)["rules.py"] == 0
    assert first(idx) == "rules.py"


def test_a_header_line_added_or_removed_through_update_file_and_a_run(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    """The whole-file paths: a line above the first definition re-chunks the file, in an
    editor's buffer (``update_file``) or on disk (``update``)."""
    idx = _indexed(repo, open_index, RULES)
    idx.update_file("rules.py", HEADER_LINE + RULES)
    assert flags(idx.db_path)["rules.py"] == 1
    assert first(idx) == "handlers.py"
    idx.update_file("rules.py", RULES)
    assert flags(idx.db_path)["rules.py"] == 0
    assert first(idx) == "rules.py"

    write(repo, "rules.py", HEADER_LINE + RULES)
    assert idx.update().files_indexed == 1
    assert flags(idx.db_path)["rules.py"] == 1
    assert first(idx) == "handlers.py"
    write(repo, "rules.py", RULES)
    idx.update()
    assert flags(idx.db_path)["rules.py"] == 0
    assert first(idx) == "rules.py"


def test_an_edit_below_the_header_keeps_the_flag(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    text = HEADER_LINE + "\n\n" + RULES + "\n\n" + HANDLERS.replace("check", "other_check")
    idx = _indexed(repo, open_index, text)
    assert flags(idx.db_path)["rules.py"] == 1
    idx.update_file("rules.py", text)
    row = block_id(idx.db_path, "rule_table")
    edited = text.replace("    return names\n", "    names.sort()\n    return names\n")
    idx.update_file("rules.py", edited)
    assert block_id(idx.db_path, "rule_table") == row  # spliced
    assert flags(idx.db_path)["rules.py"] == 1
    assert first(idx) == "handlers.py"


def test_a_components_header_counts_after_its_edit(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    component = (
        "<script>\nexport function strictModeHandlers() {\n"
        '  return ["use_strict_mode", "no_strict_mode_handlers"];\n}\n</script>\n'
        "<template>\n  <div>strict mode</div>\n</template>\n"
    )
    write(repo, "Rules.vue", component)
    idx = open_index(repo)
    idx.update()
    idx.update_file("Rules.vue", component)
    idx.update_file("Rules.vue", "<!-- Generated file, do not edit -->\n" + component)
    assert flags(idx.db_path) == {"Rules.vue": 1}
    idx.update_file("Rules.vue", component)
    assert flags(idx.db_path) == {"Rules.vue": 0}


def test_an_index_made_before_the_flag_gets_it_on_open(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "rules.py", HEADER_LINE + RULES)
    write(repo, "handlers.py", HANDLERS)
    with Index(repo) as idx:
        idx.update()
        db = idx.db_path
    expected = flags(db)
    assert expected == {"rules.py": 1, "handlers.py": 0}
    conn = sqlite3.connect(db)  # the file as the Kiln before the flag left it
    conn.execute("ALTER TABLE files DROP COLUMN generated")
    conn.execute(
        "DELETE FROM _sqlite_migrations WHERE migration_set = ? AND name = ?",
        (MIGRATION_SET, "m009_files_generated"),
    )
    conn.commit()
    conn.close()

    idx = open_index(repo)
    assert flags(db) == expected
    assert first(idx) == "handlers.py"
    assert idx.update().files_indexed == 0  # nothing re-parsed to get there
