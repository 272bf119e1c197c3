"""Incremental re-parsing gives exactly the blocks a full parse gives, edit after edit."""

from __future__ import annotations

import random

from indexer.chunker import chunk_file
from indexer.incremental import TreeCache, byte_edit

BASE = '''import os


class Store:
    """Keeps things."""

    def get(self, key):
        return self.items[key]

    def put(self, key, value):
        self.items[key] = value


def helper(x):
    return os.path.join(x, "y")
'''

EDITS = [
    lambda s: s.replace(
        "return self.items[key]", "value = self.items.get(key)\n        return value"
    ),
    lambda s: s + "\n\ndef appended(a, b):\n    return a + b\n",
    lambda s: "#!/usr/bin/env python\n" + s,
    lambda s: s.replace("    def put(self, key, value):\n        self.items[key] = value\n", ""),
    lambda s: s.replace("class Store:", "class Store(dict):  # now a dict, ünïcode"),
    lambda s: s.replace("def helper(x):", "def helper(x, (:"),  # a syntax error mid-file
    lambda s: "",
    lambda s: BASE,
]


def shape(blocks: list) -> list[tuple]:
    return [
        (b.kind, b.name, b.start_line, b.end_line, b.signature, b.text, sorted(b.refs))
        for b in blocks
    ]


def test_incremental_blocks_match_full_parses() -> None:
    trees = TreeCache()
    text = BASE
    assert shape(chunk_file("m.py", text.encode(), trees=trees)) == shape(
        chunk_file("m.py", text.encode())
    )
    for edit in EDITS:
        text = edit(text)
        data = text.encode()
        assert shape(chunk_file("m.py", data, trees=trees)) == shape(chunk_file("m.py", data)), text


def test_byte_edit_describes_the_change() -> None:
    old, new = b"ab\ncd\nef", b"ab\ncXXd\nef"
    edit = byte_edit(old, new)
    assert edit == {
        "start_byte": 4,
        "old_end_byte": 4,
        "new_end_byte": 6,
        "start_point": (1, 1),
        "old_end_point": (1, 1),
        "new_end_point": (1, 3),
    }
    assert byte_edit(old, old) is None
    shrink = byte_edit(b"aaaa", b"aa")
    assert shrink is not None and shrink["old_end_byte"] - shrink["start_byte"] == 2


def test_an_edit_counted_from_the_last_ones_start_has_the_rows_of_one_counted_from_the_top() -> (
    None
):
    """Rows are counted from a known (offset, row) pair, forward or back, as from the top."""
    rng = random.Random(5)
    for _ in range(2000):
        old = bytes(rng.choice(b"ab\n") for _ in range(rng.randint(0, 40)))
        at, cut = rng.randint(0, len(old)), rng.randint(0, 4)
        new = (
            old[:at] + bytes(rng.choice(b"x\n") for _ in range(rng.randint(0, 3))) + old[at + cut :]
        )
        offset = rng.randint(0, len(old))
        known = (offset, old.count(b"\n", 0, offset))
        assert byte_edit(old, new, known) == byte_edit(old, new), (old, new, known)


def test_cache_is_bounded() -> None:
    trees = TreeCache(size=2)
    for i in range(5):
        chunk_file(f"f{i}.py", b"x = 1\n", trees=trees)
    assert list(trees._items) == ["f3.py", "f4.py"]
