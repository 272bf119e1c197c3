"""Re-chunk only what an edit touched.

An edit to an open file (a didChange, a watcher event) usually lands inside one function body.
The file is re-parsed incrementally from the last tree (``incremental``); tree-sitter reports
which ranges changed structure; if the edit and those ranges lie strictly inside the body of
one function (at the top level or a method of classes at any depth), only that function is
chunked again. Every other block keeps its text — a class skeleton collapses the body, so it
cannot change — and only moves by the lines the edit added or removed. Anything else (an edit
across definitions, in a signature, a function small enough to be merged with its siblings,
a parse that changed elsewhere) chunks the whole file, so the result is always exactly what a
full chunk would give; ``tests/indexer/test_rechunk.py`` holds that on random edits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from indexer.blocks import TINY_LINES, Block
from indexer.chunker import Region, chunk_file, chunk_region, parser_for
from indexer.incremental import Entry, TreeCache
from indexer.languages import grammar, language_for
from indexer.pipeline import digest

FUNCTION_KINDS = ("function", "method")


@dataclass(frozen=True)
class Splice:
    """How the blocks of one function were replaced: ``old_first``..``old_last`` (1-based,
    inclusive) were its lines before the edit; blocks starting after ``edit_last`` moved by
    ``delta`` lines, and so did the ends of blocks ending at or after it (the enclosing
    classes); ``blocks`` are the function's new blocks."""

    old_first: int
    old_last: int
    edit_last: int
    delta: int
    blocks: list[Block]
    replaced: int  # how many blocks the function had before the edit
    old_digest: str  # content hash of the version the splice applies to


def chunk_edit(
    trees: TreeCache, path: str, data: bytes, language: str | None = None
) -> tuple[list[Block], Splice | None]:
    """All blocks of ``path`` as ``data``, and the splice that produced them from the last
    version cached in ``trees`` (None: the whole file was chunked)."""
    language = language or language_for(path)
    if grammar(language) is None:
        return chunk_file(path, data, language), None
    parser = parser_for(language)
    entry = trees.take(path)
    if entry is None or entry.language != language or entry.blocks is None:
        tree = parser.parse(data) if entry is None else trees.reparse(entry, data, parser)[0]
        return _full(trees, path, data, language, tree), None
    old_blocks = entry.blocks
    tree, edit, changed = trees.reparse(entry, data, parser)
    if edit is None:
        trees.put(path, Entry(language, data, tree, old_blocks))
        return list(old_blocks), None
    splice = _splice(path, data, language, tree, edit, changed, old_blocks)
    if splice is None:
        return _full(trees, path, data, language, tree), None
    splice = dataclasses.replace(splice, old_digest=digest(entry.data))
    blocks = _apply(old_blocks, splice)
    trees.put(path, Entry(language, data, tree, blocks))
    return blocks, splice


def _full(trees: TreeCache, path: str, data: bytes, language: str, tree: Any) -> list[Block]:
    blocks = chunk_file(path, data, language, tree=tree)
    trees.put(path, Entry(language, data, tree, blocks))
    return blocks


def _splice(
    path: str,
    data: bytes,
    language: str,
    tree: Any,
    edit: dict[str, Any],
    changed: list[Any],
    old_blocks: list[Block],
) -> Splice | None:
    lo = min([edit["start_byte"], *(r.start_byte for r in changed)])
    hi = max([edit["new_end_byte"], *(r.end_byte for r in changed)])
    grown = edit["new_end_byte"] - edit["old_end_byte"]
    found = _enclosing_function(language, tree, lo, hi)
    if found is None:
        return None
    node, body, scope = found
    if not (body.start_byte < lo and hi <= body.end_byte):
        return None  # the signature or the body's first byte: the skeletons may change
    if edit["old_end_byte"] > body.end_byte - grown:
        return None  # the edit was not inside the body before it either
    delta = edit["new_end_point"][0] - edit["old_end_point"][0]
    edit_first, edit_last = edit["start_point"][0] + 1, edit["old_end_point"][0] + 1
    new_last = node.end_point[0] + 1
    region = Region(
        node.start_byte, node.end_byte, node.start_point[0], new_last, False, tuple(scope)
    )
    blocks = chunk_region(path, data, language, tree, region)
    if not blocks or any(b.kind not in FUNCTION_KINDS or b.mergeable for b in blocks):
        return None
    first = blocks[0].start_line
    if any(b.name != blocks[0].name for b in blocks) or first > edit_first:
        return None
    old_last = new_last - delta
    mine = [b for b in old_blocks if b.start_line >= first and b.end_line <= old_last]
    if not mine or any(b.name != blocks[0].name or _merged(b) for b in mine):
        return None
    if mine[0].start_line != first or max(b.end_line for b in mine) != old_last:
        return None  # the function grew or shrank beyond the edit (an unclosed brace)
    for b in old_blocks:
        if first <= b.start_line <= old_last and b.end_line <= old_last:
            continue  # the function's own blocks
        inside = edit_first <= b.start_line <= edit_last or edit_first <= b.end_line < edit_last
        overlaps = b.start_line <= old_last and b.end_line >= first
        encloses = b.start_line < first and b.end_line >= old_last
        if inside or (overlaps and not encloses):
            return None
    return Splice(first, old_last, edit_last, delta, blocks, len(mine), "")


def _merged(block: Block) -> bool:
    return ", " in block.name or block.lines <= TINY_LINES


def _enclosing_function(language: str, tree: Any, lo: int, hi: int) -> tuple | None:
    """The function whose blocks hold bytes ``[lo, hi)``: the outermost function on the way
    down from the module through classes only (a function's nested definitions are part of
    its text); with its body node and the names of the classes around it."""
    import tree_sitter as ts

    cursor = ts.QueryCursor(grammar(language).query)
    cursor.set_byte_range(lo, max(hi, lo + 1))
    chain: dict[int, tuple[int, str, Any, Any, str]] = {}
    for _, caps in cursor.matches(tree.root_node):
        kind = next((k for k in caps if k.startswith("definition.")), None)
        if kind is None:
            continue
        node, name_node = caps[kind][0], caps["name"][0]
        if not (node.start_byte <= lo and hi <= node.end_byte):
            continue
        size = node.end_byte - node.start_byte
        prior = chain.get(name_node.id)
        if prior is not None and prior[0] >= size:
            continue
        name = _text(name_node)
        if "receiver" in caps:
            name = _text(caps["receiver"][0]) + "." + name
        body = caps["body"][0] if "body" in caps else None
        chain[name_node.id] = (size, kind.split(".", 1)[1], node, body, name)
    scope: list[str] = []
    for _, kind, node, body, name in sorted(chain.values(), key=lambda c: -c[0]):
        if kind == "function":
            return (node, body, scope) if body is not None else None
        scope.append(name)
    return None


def _apply(old: list[Block], s: Splice) -> list[Block]:
    out = [b for b in old if not (s.old_first <= b.start_line and b.end_line <= s.old_last)]
    moved = []
    for b in out:
        start = b.start_line + s.delta if b.start_line > s.edit_last else b.start_line
        end = b.end_line + s.delta if b.end_line >= s.edit_last else b.end_line
        if (start, end) == (b.start_line, b.end_line):
            moved.append(b)
            continue
        copy = dataclasses.replace(b, start_line=start, end_line=end, refs=set(b.refs))
        if "_hash" in b.__dict__:
            copy.__dict__["_hash"] = b.__dict__["_hash"]
        moved.append(copy)
    moved.extend(s.blocks)
    moved.sort(key=lambda b: (b.start_line, -b.end_line))
    return moved


def _text(node: Any) -> str:
    return node.text.decode("utf-8", errors="replace") if node.text is not None else ""
