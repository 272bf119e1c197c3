"""What the re-ranking (``rescore``) reads of each candidate block, kept across the searches
made on an index's writer connection.

``rescore`` reads every candidate's columns, folds case, cuts tokens and finds, for each
query term, the tokens starting like its stem, with the weight of the column each one is in.
The candidates of one editing session repeat from keystroke to keystroke, and so do most of
the query's terms, so a block's text (folded, one byte string with its columns' start
offsets), its length in tokens (FTS5's ``docsize``) and, per term start (``lead``), its
matching tokens and their weights in text order are kept here, block by block. Only the
index's writes change them, and they say which rows they wrote (``store.Touched``: rows
added, removed or rewritten in place), which are dropped here before the write commits; a
write that says nothing, another connection's commit and a rebuild drop everything (the
owner, ``search_cache.Symbols``, sees to that). A removed row's id can go to a new block: its
entry is gone by then. A search on a reader's connection (during a write) keeps nothing.
Bounded: past ``MAX_BYTES`` of text the blocks used least recently go first.
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate

from indexer import weights as W
from indexer.store import FTS_COLUMNS

MAX_BYTES = 16 << 20  # kept text, all blocks; then the least recently used go
MAX_LEADS = 64  # term starts kept per block; past it that block's are dropped
# Bytes that end a token: ASCII other than letters and digits (UTF-8 bytes of other scripts
# stay token bytes); ASCII capitals fold to lower case, as the tokenizer folds case.
_SPACES = bytes(
    c if c >= 128 or chr(c).islower() or chr(c).isdigit() else c + 32 if chr(c).isupper() else 32
    for c in range(256)
)
_WEIGHTS = [W.COLUMN_WEIGHTS[c] for c in FTS_COLUMNS]
# Column weights that are multiples of 1/64 add up exactly in any order (a block has far fewer
# than 2**40 tokens), so a token's weights may be summed once per block (``Block.tokens``);
# other weights are kept one per occurrence, to be added in text order.
_EXACT = all((w * 64).is_integer() for w in _WEIGHTS)


@dataclass(slots=True)
class Block:
    """One block as ``rescore`` sees it: ``text`` is a space, then every column, each followed
    by a space, folded (``_SPACES``); ``bounds`` where each column starts in it."""

    length: int  # tokens in all columns (0: no docsize row)
    text: bytes
    bounds: tuple[int, ...]
    leads: dict[bytes, tuple[tuple[bytes, float], ...]] = field(default_factory=dict)

    def tokens(self, lead: bytes) -> tuple[tuple[bytes, float], ...]:
        """The tokens starting with ``lead`` (a space, then a term's start) with their column
        weights: each distinct token once, in the order tokens first come in the text, with
        the weights of all its occurrences added up (``_EXACT``: the same float as adding them
        one by one in any order, and a term's first token comes first), else each occurrence
        in text order."""
        found = self.leads.get(lead)
        if found is not None:
            return found
        text, bounds = self.text, self.bounds
        if _EXACT:
            weights: dict[bytes, float] = {}
            pieces = text.split(lead)
            at, head, step = len(pieces[0]), lead[1:], len(lead)
            for piece in pieces[1:]:
                end = piece.find(b" ")
                word = head + piece[:end] if end >= 0 else head + piece
                weights[word] = weights.get(word, 0.0) + _WEIGHTS[bisect_right(bounds, at + 1) - 1]
                at += step + len(piece)
            out = tuple(weights.items())
        else:
            each = []
            at = text.find(lead)
            while at >= 0:
                end = text.find(b" ", at + 1)
                each.append((text[at + 1 : end], _WEIGHTS[bisect_right(bounds, at + 1) - 1]))
                at = text.find(lead, end)
            out = tuple(each)
        if len(self.leads) >= MAX_LEADS:
            self.leads.clear()
        found = self.leads[lead] = out
        return found


def read(conn: sqlite3.Connection, ids: list[int]) -> dict[int, Block]:
    """The blocks ``ids`` that have rows, read afresh, each with its ``docsize`` row in one
    statement. SQLite hands over each column's UTF-8 bytes (the columns are NOT NULL text),
    so no column is decoded or encoded here; a column under 128 tokens is one varint byte
    of ``docsize``, so most sizes are summed as they are."""
    out: dict[int, Block] = {}
    columns = ", ".join(f"CAST(r.{c} AS BLOB)" for c in FTS_COLUMNS)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        sql = (
            f"SELECT r.id, d.sz, {columns} FROM block_rows r LEFT JOIN blocks_fts_docsize d"
            f" ON d.id = r.id WHERE r.id IN ({','.join('?' * len(chunk))})"
        )
        for block_id, size, *texts in conn.execute(sql, chunk):
            text = b" ".join((b"", *texts, b"")).translate(_SPACES)
            bounds = tuple(accumulate([len(t) + 1 for t in texts[:-1]], initial=1))
            length = 0 if size is None else sum(size) if size.isascii() else varint_sum(size)
            out[block_id] = Block(length, text, bounds)
    return out


def varint_sum(data: bytes) -> int:
    """The sum of SQLite's variable-length integers in ``data`` (``varints``, added up)."""
    total = value = n = 0
    for byte in data:
        if n == 8:  # the ninth byte holds eight bits
            total += (value << 8) | byte
            value = n = 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
            n += 1
        else:
            total += (value << 7) | byte
            value = n = 0
    return total


def varints(data: bytes) -> list[int]:
    """SQLite's variable-length integers, one after another."""
    out: list[int] = []
    i = 0
    while i < len(data):
        value = 0
        for n in range(9):
            byte = data[i]
            i += 1
            if n == 8:  # the ninth byte holds eight bits
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


class BlockTerms:
    """Blocks kept for ``rescore`` (see the module's docstring). Used with the writer's lock
    held, as the writes are."""

    def __init__(self) -> None:
        self._blocks: dict[int, Block] = {}  # least recently used first
        self._bytes = 0

    def get(self, conn: sqlite3.Connection, ids: list[int]) -> dict[int, Block]:
        """The blocks ``ids`` that have rows: kept ones, the others read and kept."""
        kept = self._blocks
        out: dict[int, Block] = {}
        missing = []
        for block_id in ids:
            block = kept.pop(block_id, None)
            if block is None:
                missing.append(block_id)
            else:
                kept[block_id] = out[block_id] = block  # now the most recently used
        fresh = read(conn, missing) if missing else {}
        for block_id, block in fresh.items():
            kept[block_id] = out[block_id] = block
            self._bytes += len(block.text)
        while self._bytes > MAX_BYTES and kept:
            self._bytes -= len(kept.pop(next(iter(kept))).text)
        return out

    def drop(self, ids: Iterable[int]) -> None:
        """Forget the blocks ``ids`` (rows a write added, removed or rewrote)."""
        for block_id in ids:
            block = self._blocks.pop(block_id, None)
            if block is not None:
                self._bytes -= len(block.text)

    def clear(self) -> None:
        self._blocks.clear()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._blocks)
