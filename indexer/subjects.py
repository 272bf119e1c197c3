"""A query that names a test is usually about the code that test exercises: "Fix producer leaks
in KafkaLog4jAppenderTest", "fix flaky testRecordThreadIdleRatio". Test files are named after
that code in every ecosystem (``FooTest.java``, ``foo_test.go``, ``test_foo.py``,
``foo.spec.ts``, whose subject may be ``foo.vue``), so the file under test can be found by
name and ranked beside the test; a script without an extension too (``test_mytool.py`` ->
``bin/mytool``, ``test_my_tool.py`` -> ``bin/my-tool``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from indexer import weights as W
from indexer.paths import is_test_path

# What a test file is named after: FooTest.java, FooTests.kt, FooIT.java, TestFoo.java,
# FooTest.php, FooTests.swift, FooTests.m, FooSpec.scala, foo_test.go, foo_test.exs, foo_test.dart,
# test_foo.py, foo_spec.lua, foo.test.ts, foo.spec.js -> Foo / foo.
_TEST_NAMES = (
    re.compile(r"^(?P<s>[A-Z]\w*?)(Tests?|IT|TestCase)\.(java|kt|scala|groovy|cs|php|swift|mm?)$"),
    re.compile(r"^(?P<s>[A-Z]\w*?)Spec\.(scala|groovy|swift)$"),
    re.compile(r"^Test(?P<s>[A-Z]\w*)\.(java|kt|scala|groovy|cs)$"),
    re.compile(r"^(?P<s>\w+?)_test\.(go|py|rs|rb|exs?|dart|lua)$"),
    re.compile(r"^(?P<s>\w+?)_spec\.(rb|lua)$"),
    re.compile(r"^test_(?P<s>\w+)\.py$"),
    re.compile(r"^(?P<s>[\w.-]+?)\.(test|spec)\.[cm]?[jt]sx?$"),
)


def subject_of_test(path: str) -> str | None:
    """The file stem of the code a test file is named after (``FooTest.java`` -> ``Foo``)."""
    name = path.rsplit("/", 1)[-1]
    for pattern in _TEST_NAMES:
        found = pattern.match(name)
        if found:
            return found["s"]
    return None


def add_test_subjects(
    conn: sqlite3.Connection,
    ordered: list[int],
    meta: dict[int, tuple],
    fused: dict[int, float],
    words: set[str],
    names_of: Callable[[str], set[str]],
    fetch_meta: Callable[[sqlite3.Connection, list[int]], dict[int, tuple]],
) -> None:
    """A query that names a test and says more ("fix flaky testIdleRatio", "leaks in
    FooTest") is about the code under test as much as the test: the file the test is named
    after (``Foo.java``, ``foo.go``, ``foo.ts``, ``bin/foo``) joins the candidates at the test's score. A
    query that is only the test's name asks for the test."""
    done: set[str] = set()
    for block_id in list(ordered[: W.SEED_TOP_LEXICAL]):
        path, _kind, name = meta[block_id][:3]
        subject = subject_of_test(path)
        if subject is None or subject in done or not is_test_path(path):
            continue
        stem = path.rsplit("/", 1)[-1].split(".", 1)[0].lower()
        own = names_of(name) | {stem}
        if not words & own or not words - own:
            continue
        done.add(subject)
        score = fused[block_id] * W.TEST_SUBJECT_WEIGHT
        # a script without an extension (``bin/mytool``, ``bin/my-tool`` for ``test_my_tool.py``):
        # its row says the language its ``#!`` line names, never "text"
        names = {subject, subject.replace("_", "-")}
        found: list[tuple[int, str]] = []
        for stem in sorted(names):
            found += conn.execute(
                "SELECT id, path FROM files WHERE blocks > 0 AND language != 'text' "
                "AND (path LIKE ? ESCAPE '\\' OR path LIKE ? ESCAPE '\\' OR path = ? "
                "OR path LIKE ? ESCAPE '\\') LIMIT 8",
                (_like(stem) + ".%", "%/" + _like(stem) + ".%", stem, "%/" + _like(stem)),
            ).fetchall()
        for file_id, subject_path in dict(found).items():
            name = subject_path.rsplit("/", 1)[-1]
            if is_test_path(subject_path) or (
                name.split(".", 1)[0] != subject and name not in names
            ):
                continue
            mine = [i for i in ordered if meta[i][0] == subject_path]
            if not mine:
                first = conn.execute(
                    "SELECT id FROM blocks WHERE file_id = ? ORDER BY start_line LIMIT 1",
                    (file_id,),
                ).fetchone()
                if first is None:
                    continue
                meta.update(fetch_meta(conn, [first[0]]))
                fused[first[0]] = 0.0
                ordered.append(first[0])
                mine = [first[0]]
            fused[mine[0]] = max(fused[mine[0]], score)
    if done:
        ordered.sort(key=lambda i: (-fused[i], i))


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
