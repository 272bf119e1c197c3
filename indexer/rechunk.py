"""Re-chunk only what an edit touched.

An edit to an open file (a didChange, a watcher event) usually lands inside one function body.
The last tree of the file is moved along with the edit (``Tree.edit``: positions only, cheap)
and locates the function around it — at the top level, or a method of classes at any depth.
If the edit lies inside that function's body, only the function's own lines are parsed (the
parser's included ranges: nodes keep their positions in the file) and chunked again; every
other block keeps its text — a class skeleton collapses the body, so it cannot change — and
moves by the lines the edit added or removed. The file's tree is then out of date inside that
function, so the next edit that needs the whole file parses it from scratch.

Anything else — an edit across definitions, in a signature, a function small enough to be
merged with its siblings, a function whose text no longer parses on its own, an indented body
whose new indentation could let it run on past its old end — chunks the whole file, so the
blocks are always exactly those of a full chunk; ``tests/indexer/test_rechunk.py`` holds that
on random edit sequences in five languages, for the blocks and for the index file.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import threading
from dataclasses import dataclass
from typing import Any

from indexer.blocks import TINY_LINES, Block
from indexer.chunker import chunk_file, chunk_region, parser_for
from indexer.component_edits import chunk_component_edit
from indexer.definitions import query_cursor
from indexer.incremental import Entry, TreeCache, byte_edit
from indexer.languages import (
    COMPONENT_LANGUAGES,
    INDENT_LANGUAGES,
    grammar,
    language_of,
    new_parser,
)
from indexer.pipeline import digest
from indexer.regions import Region

FUNCTION_KINDS = ("function", "method")
_local = threading.local()


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
    old_digest: str = ""  # content hash of the version the splice applies to


def chunk_edit(
    trees: TreeCache,
    path: str,
    data: bytes,
    language: str | None = None,
    data_digest: str | None = None,
) -> tuple[list[Block], Splice | None]:
    """All blocks of ``path`` as ``data``, and the splice that produced them from the last
    version cached in ``trees`` (None: the whole file was chunked). ``data_digest``, the
    caller's content hash of ``data``, saves hashing the old version on the next edit."""
    language = language or language_of(path, data)
    if language in COMPONENT_LANGUAGES:  # its script re-parsed incrementally, chunked whole
        return chunk_component_edit(trees, path, data, language, data_digest), None
    if grammar(language) is None:
        return chunk_file(path, data, language), None
    entry = trees.take(path)
    if entry is not None and (entry.language != language or entry.blocks is None):
        entry = None
    tree = None
    if entry is not None:
        assert entry.blocks is not None
        edit = byte_edit(entry.data, data, entry.known)
        if edit is None:
            entry.digest = entry.digest or data_digest
            trees.put(path, entry)
            return list(entry.blocks), None
        known = (edit["start_byte"], edit["start_point"][0])
        entry.tree.edit(**edit)  # positions follow the edit; the content is the old one
        splice = None
        if not entry.tree.root_node.has_error:  # error recovery is not local: parse it all
            splice = _splice(path, data, language, entry.tree, edit, entry.blocks)
        if splice is not None:
            old_digest = entry.digest or digest(entry.data)
            splice = dataclasses.replace(splice, old_digest=old_digest)
            blocks = _apply(entry.blocks, splice)
            kept = Entry(language, data, entry.tree, blocks, data_digest, False, known)
            trees.put(path, kept)
            return blocks, splice
        if entry.fresh:
            tree = parser_for(language).parse(data, old_tree=entry.tree)
            if tree.root_node.has_error:  # error recovery may differ from a fresh parse's
                tree = None
    if tree is None:
        tree = parser_for(language).parse(data)
    blocks = chunk_file(path, data, language, tree=tree)
    trees.put(path, Entry(language, data, tree, blocks, data_digest))
    return blocks, None


def _splice(
    path: str, data: bytes, language: str, tree: Any, edit: dict[str, Any], old: list[Block]
) -> Splice | None:
    lo, hi = edit["start_byte"], edit["new_end_byte"]
    found = _enclosing_function(language, tree, data, lo, hi)
    if found is None:
        return None
    node, body, scope, outer = found
    # where a class skeleton cuts this body (chunker._class): after the colon, or at the brace
    indent = language in INDENT_LANGUAGES and body.prev_sibling is not None
    cut = body.prev_sibling.end_byte if indent else body.start_byte
    if not (cut < lo and hi < body.end_byte):
        return None  # the signature or the body's edges: the skeletons may change
    delta = edit["new_end_point"][0] - edit["old_end_point"][0]
    edit_first, edit_last = edit["start_point"][0] + 1, edit["old_end_point"][0] + 1
    def_line, new_last = node.start_point[0] + 1, node.end_point[0] + 1
    old_last = new_last - delta
    # blocks starting below the function's old end can neither be its own nor overlap it, nor
    # hold the edited lines (those are inside its body): only the blocks above are looked at
    above = old[: bisect.bisect_right(old, old_last, key=_start)]
    mine = [b for b in above if b.kind in FUNCTION_KINDS and def_line <= b.end_line <= old_last]
    if not mine or any(b.name != mine[0].name or _merged(b) for b in mine):
        return None
    first = mine[0].start_line
    if first > def_line or max(b.end_line for b in mine) != old_last:
        return None
    own = {id(b) for b in mine}
    # the function's header ends on the line of the cut; a skeleton of a long class is cut
    # into parts at skeleton lines, which may fall on these lines (a many-line signature)
    header_last = (body.prev_sibling.end_point[0] if indent else body.start_point[0]) + 1
    for b in above:
        if first <= b.start_line and b.end_line <= old_last:
            if id(b) not in own:
                return None
            continue
        inside = edit_first <= b.start_line <= edit_last or edit_first <= b.end_line < edit_last
        overlaps = b.start_line <= old_last and b.end_line >= first
        encloses = b.start_line < first and b.end_line >= old_last
        if inside or (
            overlaps and not encloses and not _header_part(b, first, header_last, old_last)
        ):
            return None
    lo_byte = _line_start(data, node.start_byte - node.start_point[1], def_line - first)
    if indent and _dedented(data, node, body, cut):
        return None  # a line left of the def (a comment?): the file's parse may differ
    ranges = _ranges(language, data, outer, lo_byte, node, first)
    if ranges is None:
        return None
    blocks = _chunk_function(path, data, language, ranges, lo_byte, node, first, scope)
    if blocks is None or any(b.name != mine[0].name for b in blocks):
        return None
    if blocks[0].start_line != first or max(b.end_line for b in blocks) != new_last:
        return None
    return Splice(first, old_last, edit_last, delta, blocks, len(mine))


def _header_part(b: Block, first: int, header_last: int, last: int) -> bool:
    """Whether ``b``, overlapping the function (lines ``first``..``last``) without holding
    all of it, is a part of a class skeleton that starts or ends on the function's header
    lines (``first``..``header_last``) and whose other end lies outside the function. The skeleton collapses the body, so an edit inside it
    changes neither the part's text nor where the skeleton is cut into parts: the part keeps
    its start and its end moves with the lines below, as ``_apply`` moves it."""
    if b.kind in FUNCTION_KINDS:
        return False
    starts = first <= b.start_line <= header_last
    ends = first <= b.end_line <= header_last
    return (starts and b.end_line > last) or (ends and b.start_line < first)


def _ranges(
    language: str, data: bytes, outer: list[tuple[Any, Any]], lo_byte: int, node: Any, first: int
) -> list[Any] | None:
    """What to parse for one function: each enclosing class's header lines (and, with braces,
    its closing brace), and the function's own lines, from ``lo_byte`` (its first line with
    attached comments) to the end of its node. Positions stay those of the file."""
    import tree_sitter as ts

    heads, tails = [], []
    for cls, body in outer:
        start = cls.start_byte - cls.start_point[1]
        opening = body.start_byte if language not in INDENT_LANGUAGES else body.prev_sibling
        end_byte = opening if isinstance(opening, int) else getattr(opening, "end_byte", None)
        if end_byte is None:
            return None
        stop = data.find(b"\n", end_byte) + 1 or len(data)
        if stop > lo_byte:
            return None  # the class header shares a line with the function
        rows = (cls.start_point[0], data.count(b"\n", start, stop) + cls.start_point[0])
        heads.append(ts.Range(ts.Point(rows[0], 0), ts.Point(rows[1], 0), start, stop))
        if language not in INDENT_LANGUAGES:
            if data[body.end_byte - 1 : body.end_byte] != b"}":
                return None
            end = body.end_point
            tails.append(
                ts.Range(ts.Point(end[0], end[1] - 1), end, body.end_byte - 1, body.end_byte)
            )
    own = ts.Range(ts.Point(first - 1, 0), node.end_point, lo_byte, node.end_byte)
    if tails and tails[-1].start_byte < node.end_byte:
        return None
    return [*heads, own, *reversed(tails)]


def _dedented(data: bytes, node: Any, body: Any, cut: int) -> bool:
    """Whether the function's extent in a parse of the whole file may differ from its old one:
    a line of its body (from the line after the header's colon, ``cut``: a line typed above
    the first statement counts) starts left of, or at, the ``def``; or the first line after
    the function is indented as deep as the body's shallowest line, so the body could run on
    past its old end."""
    column = node.start_point[1]
    after_colon = data.find(b"\n", cut) + 1 or len(data)
    start = min(data.rfind(b"\n", 0, body.start_byte) + 1, after_colon)
    lines = data[start : node.end_byte].split(b"\n")
    shallowest = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    if shallowest <= column:
        return True
    following = _NEXT_LINE.search(data, node.end_byte)
    return following is not None and len(following.group(1)) >= shallowest


_NEXT_LINE = re.compile(rb"\n([ \t]*)\S")  # the indentation of the next non-blank line


def _chunk_function(
    path: str,
    data: bytes,
    language: str,
    ranges: list[Any],
    lo_byte: int,
    node: Any,
    first: int,
    scope: list[str],
) -> list[Block] | None:
    """The blocks of one function, parsing only ``ranges``; None if that text does not parse
    cleanly on its own."""
    parsers = _local.__dict__.setdefault("parsers", {})
    parser = parsers.get(language) or parsers.setdefault(language, new_parser(language))
    parser.included_ranges = ranges
    tree = parser.parse(data)
    if tree is None or tree.root_node.has_error:
        return None
    region = Region(lo_byte, node.end_byte, first - 1, node.end_point[0] + 1, False, tuple(scope))
    blocks = chunk_region(path, data, language, tree, region, lo_byte)
    if not blocks or any(b.kind not in FUNCTION_KINDS or b.mergeable for b in blocks):
        return None
    return blocks


def _line_start(data: bytes, pos: int, up: int) -> int:
    """The start of the line ``up`` lines above the line starting at ``pos``."""
    for _ in range(up):
        pos = data.rfind(b"\n", 0, pos - 1) + 1
    return pos


def _merged(block: Block) -> bool:
    return ", " in block.name or block.lines <= TINY_LINES


def _enclosing_function(language: str, tree: Any, data: bytes, lo: int, hi: int) -> tuple | None:
    """The function whose blocks hold bytes ``[lo, hi)``: the outermost function on the way
    down from the module through classes only (a function's nested definitions are part of
    its text); with its body node and the names of the classes around it. Names are read from
    ``data``: the tree's own text is that of an older version."""
    g = grammar(language)
    if g is None:  # plain text: no functions
        return None
    cursor = query_cursor(g)
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
        prior = chain.get(name_node.start_byte)
        if prior is not None and prior[0] >= size:
            continue
        name = _text(data, name_node)
        if "receiver" in caps:
            name = _text(data, caps["receiver"][0]) + "." + name
        body = caps["body"][0] if "body" in caps else None
        chain[name_node.start_byte] = (size, kind.split(".", 1)[1], node, body, name)
    scope: list[str] = []
    outer: list[tuple[Any, Any]] = []
    for _, kind, node, body, name in sorted(chain.values(), key=lambda c: -c[0]):
        if kind == "function":
            return (node, body, scope, outer) if body is not None else None
        if body is None:
            return None
        scope.append(name)
        outer.append((node, body))
    return None


def _apply(old: list[Block], s: Splice) -> list[Block]:
    """``old`` (sorted by start line, longest first) with the function's blocks replaced and
    the blocks around it moved, in place: ``old`` is the cache's own list, taken out of it for
    this edit (``chunk_edit``), so its blocks are moved rather than copied (a few hundred below
    an edit near the top of a large module). ``_splice`` made sure the function's blocks are
    one run of ``old`` with every block above starting before it and every block below after
    it, so the result is the part above, the new blocks, the part below: no sort."""
    first = bisect.bisect_left(old, s.old_first, key=_start)
    last = first
    while last < len(old) and old[last].end_line <= s.old_last:
        last += 1
    if last < len(old) and old[last].start_line <= s.old_last:  # not one run: the long way
        kept = [b for b in old if not (s.old_first <= b.start_line and b.end_line <= s.old_last)]
        for b in kept:
            _move(b, s)
        return sorted([*kept, *s.blocks], key=_order)
    delta, edge = s.delta, s.edit_last
    if delta:
        for b in old[:first]:  # above: only the ends of the classes around the function
            if b.end_line >= edge:
                b.end_line += delta
        for b in old[last:]:  # below: they start after the function, past the edit
            b.start_line += delta
            b.end_line += delta
    return [*old[:first], *s.blocks, *old[last:]]


def _start(b: Block) -> int:
    return b.start_line


def _order(b: Block) -> tuple[int, int]:
    return b.start_line, -b.end_line


def _move(b: Block, s: Splice) -> None:
    if b.start_line > s.edit_last:
        b.start_line += s.delta
    if b.end_line >= s.edit_last:
        b.end_line += s.delta


def _text(data: bytes, node: Any) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
