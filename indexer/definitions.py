"""The definitions a language's query finds in a parsed file, nested by byte containment.

Each definition carries the row where it starts once its decorators and leading comments are
attached; a function's nested definitions stay inside it, a class's become its children. The
references the query captures come back beside them. Cutting definitions into blocks is
``indexer.chunker``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from indexer.languages import (
    ATTACHED_TYPES,
    CLAUSE_LANGUAGES,
    COMMENT_HOSTS,
    COMMENT_WRAPPERS,
    Grammar,
)
from indexer.regions import Region, node_text

# How deep in the syntax tree a definition or reference may start to be matched. Reaching a
# node's neighbours (``prev_sibling``, ``parent``) costs tree-sitter a walk down from the root,
# so a checkout's 1 MB of ``fn a(){`` nested 100,000 deep cost minutes per file (quadratic);
# real code nests a few dozen levels (a callback chain is about five nodes a level). A
# definition deeper than this stays in the text of the block around it.
MAX_START_DEPTH = 400


def query_cursor(g: Grammar) -> Any:
    """A query cursor over ``g``'s query that starts no match deeper than ``MAX_START_DEPTH``."""
    import tree_sitter as ts

    cursor = ts.QueryCursor(g.query)
    cursor.set_max_start_depth(MAX_START_DEPTH)
    return cursor


@dataclass
class Def:
    """One definition the query matched, with the definitions nested in it (classes only)."""

    node: Any
    kind: str  # function | class | type
    name: str
    body: Any
    start_row: int  # with attached decorators/comments
    children: list[Def] = field(default_factory=list)
    name_row: int = -1  # the row of its name, once the chunker has looked (``_name_row``)
    captures: int = 0  # how many captures its pattern made (see ``find_definitions``)
    end_row: int = -1  # its last row (``last_row``)


def find_definitions(
    g: Grammar,
    cursor: Any,
    tree: Any,
    lines: Sequence[str],
    lo: int,
    hi: int,
    region: Region | None,
) -> tuple[list[Def], list[tuple[int, bytes | None]]]:
    """The definition tree (roots) and the ``(row, name)`` references in rows ``lo``..``hi``
    that ``cursor`` (a query cursor over ``g``'s query) matches in ``tree``; with
    ``region``, only definitions wholly inside its bytes. A reference's name is left as the
    node's bytes (``ref_name`` decodes it): a file names the same things over and over, and
    each block decodes each of its names once."""
    defs: dict[int, Def] = {}
    refs: list[tuple[int, bytes | None]] = []
    add = refs.append
    kinds: dict[int, str] = {}  # pattern -> its definition capture
    references = g.references
    whole = region is None  # every row of the file is wanted
    for pattern, caps in cursor.matches(tree.root_node):
        keys = references[pattern]
        if keys is not None:
            for key in keys:
                for n in caps.get(key, ()):
                    if whole:
                        add((n.start_point[0], n.text))
                    elif lo <= (row := n.start_point[0]) < hi:
                        add((row, n.text))
            continue
        kind = kinds.get(pattern)
        if kind is None:
            kind = kinds[pattern] = next(k for k in caps if k.startswith("definition."))
        node, name_node = caps[kind][0], caps["name"][0]
        if region is not None and (
            node.start_byte < region.lo_byte or node.end_byte > region.hi_byte
        ):
            continue
        prior = defs.get(name_node.id)
        if prior is not None:  # the wider node wins (a decorated definition), then the
            # pattern that captured more (a body, a receiver): match order is not pattern order
            wider = (prior.node.end_byte - prior.node.start_byte) - (
                node.end_byte - node.start_byte
            )
            if wider > 0 or (wider == 0 and prior.captures >= len(caps)):
                continue
        # stripped: PowerShell's grammar, re-parsing an edited file, may start a name node
        # on the space before the name (a fresh parse does not)
        name = node_text(name_node).strip()
        if "receiver" in caps:
            name = node_text(caps["receiver"][0]).strip() + "." + name
        body = caps["body"][0] if "body" in caps else None
        if body is not None and body.start_byte >= node.end_byte:
            node = Joined(node, body)  # Dart: a signature, then its body beside it
        elif "tail" in caps:  # ... or an expression body, not collapsed in skeletons
            node = Joined(node, caps["tail"][0])
        defs[name_node.id] = Def(
            node,
            kind.split(".", 1)[1],
            name,
            body,
            attached_start(lines, node),
            captures=len(caps),
            end_row=last_row(lines, node),
        )
    ordered = sorted(defs.values(), key=lambda d: (d.node.start_byte, -d.node.end_byte))
    if g.name in CLAUSE_LANGUAGES:
        ordered = _join_clauses(ordered)
    roots = _nest(ordered)
    return roots, refs


class Joined:
    """A definition a grammar leaves in two sibling nodes, its signature and then its body
    (Dart's ``method_signature`` and ``function_body``): one node to the chunker, from the
    signature's start (and its attached comments) to the body's end."""

    def __init__(self, head: Any, body: Any) -> None:
        self.head = head
        self.id = head.id
        self.type = head.type
        self.start_byte, self.start_point = head.start_byte, head.start_point
        self.end_byte, self.end_point = body.end_byte, body.end_point
        self.prev_sibling = head.prev_sibling

    def child_by_field_name(self, name: str) -> Any:
        return self.head.child_by_field_name(name)


def ref_name(raw: bytes | None) -> str:
    """A reference's name as ``find_definitions`` returns it, decoded (``node_text``'s rule)."""
    return raw.decode("utf-8", errors="replace") if raw is not None else ""


def ref_names(raws: set[bytes | None]) -> list[str]:
    """``ref_name`` of each of ``raws``, decoded in one go (names are identifiers: joined by
    newlines, each decodes as it would alone; one holding a newline is decoded on its own)."""
    if None in raws:
        return [*ref_names(raws - {None}), ""]
    names = b"\n".join(raws).decode("utf-8", errors="replace").split("\n")  # type: ignore[arg-type]
    return names if len(names) == len(raws) else [ref_name(raw) for raw in raws]


def last_row(lines: Sequence[str], node: Any) -> int:
    """A definition's last row. A node of an indentation grammar (Scala 3) may end at column
    0 of the row after its last line, blank lines between: those rows are not its own."""
    row, col = node.end_point
    if col or row <= node.start_point[0]:
        return int(row)
    row -= 1
    while row > node.start_point[0] and not lines[row].strip():
        row -= 1
    return int(row)


def attached_start(lines: Sequence[str], node: Any) -> int:
    """Row where a definition starts once its decorators and leading comments are attached."""
    row = node.start_point[0]
    prev = node.prev_sibling
    wrapper = getattr(node, "parent", None) if prev is None else None
    while (
        prev is None
        and wrapper is not None
        and wrapper.type in COMMENT_WRAPPERS
        and wrapper.start_byte == node.start_byte
    ):
        prev = wrapper.prev_sibling  # the first of a list the grammar wraps: the comment
        wrapper = wrapper.parent  # is before the list
    while prev is not None and not prev.is_named and prev.end_point[0] == row:
        prev = prev.prev_sibling  # a keyword left outside the node (Zig's ``pub``)
    while prev is not None and prev.type in COMMENT_HOSTS and prev.child_count:
        prev = prev.children[-1]  # a comment the grammar hung inside the node before
    while prev is not None and prev.type in ATTACHED_TYPES and prev.end_point[0] >= row - 1:
        prow, pcol = prev.start_point
        if lines[prow][:pcol].strip():  # a trailing comment of the previous statement
            break
        row = prow
        prev = prev.prev_sibling
    return row


def _join_clauses(defs: list[Def]) -> list[Def]:
    """One definition per function of a language that writes a function as clauses
    (``pop [] = ...`` then ``pop (x:xs) = ...``): a clause right after one of the same name
    (blank lines and comments between) extends it."""
    out: list[Def] = []
    for d in defs:
        prev = out[-1] if out else None
        if (
            prev is not None
            and d.kind == prev.kind == "function"
            and d.name == prev.name
            and d.node.start_byte >= prev.node.end_byte
            and d.start_row <= prev.end_row + 2
        ):
            prev.node = Joined(prev.node, d.node)
            prev.end_row = d.end_row
            continue
        out.append(d)
    return out


def _nest(defs: list[Def]) -> list[Def]:
    """Build the definition tree by byte containment; a function's nested defs stay inside it."""
    roots: list[Def] = []
    stack: list[Def] = []
    for d in defs:
        while stack and d.node.start_byte >= stack[-1].node.end_byte:
            stack.pop()
        if stack:
            parent = stack[-1]
            if parent.kind == "function":
                continue  # nested in a function: part of its text, not its own block
            parent.children.append(d)
        else:
            roots.append(d)
        stack.append(d)
    return roots
