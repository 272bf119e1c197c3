"""Cut one source file into blocks with tree-sitter: functions, methods, class skeletons and a
module preamble, each with its qualified name, signature, docstring and referenced names.

Definitions come from the per-language query (``queries/<lang>.scm``); everything else here is
language-neutral, which is why a new language is a query file plus an extension mapping.
Finding and nesting the definitions is ``indexer.definitions``; this module cuts them into blocks.
"""

from __future__ import annotations

import re
import threading
from itertools import accumulate
from operator import itemgetter
from typing import Any

from indexer.blocks import (
    BOM,
    MAX_BLOCK_LINES,
    MAX_DOCSTRING,
    MAX_SIGNATURE,
    TINY_LINES,
    Block,
    first_line,
    line_windows,
    merge_tiny,
    module_name,
)
from indexer.components import name_component, script_tree
from indexer.definitions import Def, find_definitions, query_cursor, ref_names
from indexer.languages import (
    BRACE_BODY,
    COMPONENT_LANGUAGES,
    INDENT_BODY,
    INDENT_LANGUAGES,
    grammar,
    language_of,
    new_parser,
)
from indexer.regions import Region, RegionLines, py_docstring

_local = threading.local()
_XML_TAG = re.compile(r"</?\w+[^>]*>")
_ELIXIR_DOC = re.compile(r"^\s*@doc\s+")
_ATTRIBUTE = re.compile(r"^\s*@(?!doc\s)\w+")
_COMMENT_MARKS = re.compile(r"^\s*(?:///?|/\*\*?|\(\*\*?|\*/|\*|#|%+|---?(?: ?\|)?)\s?")


def parser_for(language: str) -> Any:
    """This thread's parser for ``language`` (parsers are not thread-safe)."""
    return _parser(language)


def chunk_region(
    path: str, data: bytes, language: str, tree: Any, region: Region, lo_byte: int
) -> list[Block]:
    """The blocks of ``region`` of an already parsed file (see ``rechunk``); ``lo_byte`` is
    where ``region.first_row`` starts: only the region's lines are decoded."""
    lines = RegionLines(data, region.first_row, lo_byte, region.end_row)
    chunker = _Chunker(path, data, lines, language, grammar(language), region.end_row)  # type: ignore[arg-type]
    chunker.row_base = (region.first_row, lo_byte)
    return chunker.run(tree, region)


def _parser(language: str) -> Any:
    parsers = _local.__dict__.setdefault("parsers", {})
    if language not in parsers:
        parsers[language] = new_parser(language)
    return parsers[language]


def chunk_file(
    path: str, data: bytes, language: str | None = None, trees: Any = None, tree: Any = None
) -> list[Block]:
    """All blocks of one file. ``path`` is repo-relative (POSIX); bad UTF-8 is replaced.
    ``trees`` (an ``incremental.TreeCache``) lets a re-edited file be re-parsed incrementally;
    ``tree`` is the file already parsed."""
    language = language or language_of(path, data)
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if language in COMPONENT_LANGUAGES:  # a .vue/.svelte file: its <script> blocks' code
        script, tree, _ = script_tree(language, data)
        return chunk_component(path, data, language, script, tree)
    g = grammar(language)
    if g is None:
        return line_windows(lines, path, language)
    if tree is None:
        parser = _parser(language)
        tree = parser.parse(data) if trees is None else trees.parse(path, language, data, parser)
    return _Chunker(path, data, lines, language, g).run(tree)


def chunk_component(path: str, data: bytes, language: str, script: str, tree: Any) -> list[Block]:
    """The blocks of a component whose script blocks ``tree`` holds, read with ``script``."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    blocks = _Chunker(path, data, lines, script, grammar(script)).run(tree)
    return name_component(path, blocks, language)


class _Chunker:
    def __init__(
        self, path: str, data: bytes, lines: list[str], language: str, g: Any, rows: int = -1
    ) -> None:
        self.path, self.data, self.lines, self.language, self.g = path, data, lines, language, g
        self.module = module_name(path)
        self.row_base = (0, 0)  # (row, byte) where line starts are counted from
        # a region's chunker is told its last row: len(lines) would decode the whole file
        self.rows = len(lines) if rows < 0 else rows

    def run(self, tree: Any, region: Region | None = None) -> list[Block]:
        """The file's blocks; with ``region``, only the blocks of those rows (see ``Region``)."""
        cursor = query_cursor(self.g)
        lo, hi = (region.first_row, region.end_row) if region else (0, len(self.lines))
        self.rows = hi
        if region is not None:
            cursor.set_byte_range(region.lo_byte, region.hi_byte)
        roots, refs = find_definitions(self.g, cursor, tree, self.lines, lo, hi, region)
        scope = list(region.scope) if region else []
        blocks = self._emit(roots, scope, in_class=bool(scope))
        blocks.extend(self._preamble(roots, tree.root_node, lo, hi, region))
        self._assign_refs(blocks, refs)
        blocks = self._merge(blocks)
        blocks.sort(key=lambda b: (b.start_line, -b.end_line))
        return blocks

    # ---- definitions ------------------------------------------------------------------

    def _emit(self, defs: list[Def], scope: list[str], in_class: bool) -> list[Block]:
        out: list[Block] = []
        for d in defs:
            qualified = ".".join([*scope, d.name]) if scope else d.name
            short = re.split(r"::|\.", d.name)[-1] if "." in d.name or "::" in d.name else d.name
            if d.kind == "function":
                out.extend(
                    self._function(d, qualified, short, "method" if in_class else "function")
                )
            else:
                out.extend(self._class(d, qualified, short))
                out.extend(self._emit(d.children, [*scope, d.name], in_class=True))
        return out

    def _function(self, d: Def, qualified: str, short: str, kind: str) -> list[Block]:
        end = d.end_row
        sig, doc = self._signature(d), self._docstring(d)
        parts = self._split(d, end) if end - d.start_row + 1 > MAX_BLOCK_LINES else None
        if not parts:
            block = self._block(kind, qualified, sig, doc, d.start_row, end, [short])
            block.mergeable = block.lines <= TINY_LINES
            return [block]
        header = self.lines[d.start_row : parts[0][0]]
        blocks = []
        for i, (first, last) in enumerate(parts):
            start = d.start_row if i == 0 else first
            text_lines = (
                self.lines[start : last + 1] if i == 0 else header + self.lines[first : last + 1]
            )
            block = self._block(
                kind, qualified, sig, doc if i == 0 else "", start, last, [short] if i == 0 else []
            )
            block.text = "\n".join(text_lines)
            blocks.append(block)
        return blocks

    def _split(self, d: Def, end: int) -> list[tuple[int, int]] | None:
        """Row ranges of statement groups, each small enough to fit with the repeated header."""
        body = d.body
        if body is None:
            return None
        stmts = body.named_children
        while len(stmts) == 1 and stmts[0].named_child_count > 1:  # Go's statement_list
            stmts = stmts[0].named_children
        if len(stmts) < 2 or stmts[0].start_point[0] <= d.node.start_point[0]:
            return None
        first_row = stmts[0].start_point[0]
        budget = max(MAX_BLOCK_LINES - (first_row - d.start_row), MAX_BLOCK_LINES // 2)
        groups: list[tuple[int, int]] = []
        start, last = first_row, -1
        for stmt in stmts:
            s_end = stmt.end_point[0]
            if last >= start and s_end - start + 1 > budget:
                groups.append((start, last))
                start = last + 1
            last = max(last, s_end)
        groups.append((start, max(last, end)))
        return groups if len(groups) > 1 else None

    def _class(self, d: Def, qualified: str, short: str) -> list[Block]:
        """A skeleton: the class text with every nested definition's body collapsed; a skeleton
        longer than a block is cut into parts that repeat the class header."""
        end = d.end_row
        pieces: list[bytes] = []
        pos = self._line_start(d.start_row)
        jumps: dict[int, int] = {}  # row where a body was cut -> row where that body ended
        indent = self.language in INDENT_LANGUAGES
        for child in d.children:
            body = child.body
            if body is None:
                continue
            if indent and body.prev_sibling is not None:
                cut, cut_row, repl = (
                    body.prev_sibling.end_byte,
                    body.prev_sibling.end_point[0],
                    INDENT_BODY,
                )
            else:
                cut, cut_row = body.start_byte, body.start_point[0]
                repl = INDENT_BODY if indent else BRACE_BODY
            if cut < pos:
                continue
            pieces.append(self.data[pos:cut])
            pieces.append(repl.encode())
            pos = body.end_byte
            jumps[cut_row] = body.end_point[0]
        stop = d.node.end_byte if end == d.node.end_point[0] else self._line_start(end + 1) - 1
        pieces.append(self.data[pos:stop])
        text = b"".join(pieces).decode("utf-8", errors="replace")
        sig, doc = self._signature(d), self._docstring(d)
        skeleton = text.split("\n")
        if len(skeleton) <= MAX_BLOCK_LINES:
            block = self._block(d.kind, qualified, sig, doc, d.start_row, end, [short])
            block.text = text
            return [block]
        rows = []  # original row of each skeleton line
        row = d.start_row
        for _ in skeleton:
            rows.append(row)
            while jumps.get(row, row) != row:
                row = jumps[row]
            row += 1
        name_row = self._name_row(d)
        header = next(
            (ln for ln, r in zip(skeleton, rows, strict=True) if r == name_row), skeleton[0]
        )
        parts = []
        for i in range(0, len(skeleton), MAX_BLOCK_LINES):
            last = min(i + MAX_BLOCK_LINES, len(skeleton)) - 1
            first_row = d.start_row if i == 0 else rows[i]
            last_row = end if last == len(skeleton) - 1 else rows[last]
            block = self._block(
                d.kind,
                qualified,
                sig,
                doc if i == 0 else "",
                first_row,
                last_row,
                [short] if i == 0 else [],
            )
            block.text = "\n".join(([header] if i else []) + skeleton[i : last + 1])
            parts.append(block)
        return parts

    def _signature(self, d: Def) -> str:
        name_row_start = self._line_start(self._name_row(d))
        stop = d.body.start_byte if d.body is not None else d.node.end_byte
        raw = self.data[name_row_start:stop].decode("utf-8", errors="replace")
        if d.body is None:
            raw = raw.split("\n", 1)[0]
        # whitespace runs as one space: str.split() cuts at the characters regex \s matches
        # (not at a byte order mark, which a file saved on Windows starts with)
        return " ".join(raw.replace(BOM, " ").split()).rstrip("{:").strip()[:MAX_SIGNATURE]

    def _name_row(self, d: Def) -> int:
        if d.name_row >= 0:
            return d.name_row
        node = d.node
        for field_name in ("definition", "declaration"):  # unwrap decorators / export
            inner = node.child_by_field_name(field_name)
            if inner is not None:
                node = inner
        d.name_row = int(node.start_point[0])
        return d.name_row

    def _docstring(self, d: Def) -> str:
        if self.language == "python" and d.body is not None:
            doc = py_docstring(d.body)
            if doc:
                return doc
        comment = self.lines[d.start_row : self._name_row(d)]
        if self.language == "elixir":  # @doc "..." (other attributes are no doc)
            comment = [_ELIXIR_DOC.sub("", ln) for ln in comment if not _ATTRIBUTE.match(ln)]
        cleaned = [
            _COMMENT_MARKS.sub("", ln).removesuffix("*)").rstrip("*/ ").strip()
            for ln in comment
            if not ln.lstrip().startswith("@")
        ]
        if self.language in ("julia", "elixir"):  # a docstring is a string: """...""" or "..."
            cleaned = [c.strip('"').strip() for c in cleaned]
        elif self.language == "csharp":  # XML doc comments: <summary>...</summary>
            cleaned = [_XML_TAG.sub("", c).strip() for c in cleaned]
        return "\n".join(c for c in cleaned if c)[:MAX_DOCSTRING]

    # ---- module preamble ----------------------------------------------------------------

    def _preamble(
        self, roots: list[Def], root_node: Any, lo: int, hi: int, region: Region | None
    ) -> list[Block]:
        """Top-level lines no definition covers (imports, constants, scripts), in bounded parts."""
        covered = bytearray(self.rows)
        for d in roots:
            covered[d.start_row : d.end_row + 1] = b"\x01" * (d.end_row + 1 - d.start_row)
        lines = self.lines
        rows = [r for r in range(lo, hi) if not covered[r] and lines[r].strip()]
        if not rows:
            return []
        first_part = region is None or region.first_part
        doc = py_docstring(root_node) if self.language == "python" and first_part else ""
        parts: list[list[int]] = [[rows[0]]]
        for prev, row in zip(rows, rows[1:], strict=False):
            # A definition in between, or a full part, starts a new part: spans stay exact.
            if b"\x01" in covered[prev + 1 : row] or len(parts[-1]) >= MAX_BLOCK_LINES:
                parts.append([row])
            else:
                parts[-1].append(row)
        blocks = []
        for i, part in enumerate(parts):
            sig = first_line(self.lines[part[0]])
            blocks.append(
                self._block(
                    "module", self.module, sig, doc if i == 0 else "", part[0], part[-1], []
                )
            )
        return blocks

    # ---- references and merging -----------------------------------------------------------

    def _assign_refs(self, blocks: list[Block], refs: list[tuple[int, bytes | None]]) -> None:
        none = len(blocks)  # the owner of rows no block holds: its names are dropped
        owner = [none] * self.rows
        order = sorted(
            range(len(blocks)),
            key=lambda i: (blocks[i].kind != "class", blocks[i].kind == "module"),
        )
        for i in order:
            b = blocks[i]
            owner[b.start_line - 1 : b.end_line] = [i] * b.lines
        if refs:
            owner.extend([none] * (max(map(itemgetter(0), refs)) + 1 - len(owner)))
        found: list[set[bytes | None]] = [set() for _ in range(none + 1)]
        add = [names.add for names in found]
        for row, raw in refs:
            add[owner[row]](raw)
        for b, raws in zip(blocks, found, strict=False):
            if raws:
                b.refs.update(ref_names(raws))
                b.refs.difference_update(b.defines)

    def _merge(self, blocks: list[Block]) -> list[Block]:
        """Merge tiny adjacent siblings; siblings share a scope (the name minus its last part)."""
        out: list[Block] = []
        run: list[Block] = []
        scope = None
        for b in blocks:
            b_scope = b.name.rsplit(".", 1)[0] if b.mergeable else None
            if run and (not b.mergeable or b_scope != scope):
                out.extend(merge_tiny(run, self.lines))
                run = []
            if b.mergeable:
                run.append(b)
                scope = b_scope
            else:
                out.append(b)
        out.extend(merge_tiny(run, self.lines))
        return out

    # ---- helpers ------------------------------------------------------------------------

    def _line_start(self, row: int) -> int:
        base_row, base = self.row_base
        if row < base_row:  # above a region (a region never reads there): count from 0
            pos = 0
            for _ in range(row):
                pos = self.data.find(b"\n", pos) + 1
            return pos
        starts = self.__dict__.get("_starts")
        if starts is None:
            lines = self.data[base:].split(b"\n", self.rows - base_row)
            starts = list(accumulate(map((1).__add__, map(len, lines)), initial=base))
            self._starts = starts
        row -= base_row
        return starts[row] if row < len(starts) else len(self.data)

    def _block(
        self, kind: str, name: str, sig: str, doc: str, start: int, end: int, defines: list[str]
    ) -> Block:
        return Block(
            kind=kind,
            name=name,
            signature=sig,
            docstring=doc,
            start_line=start + 1,
            end_line=end + 1,
            text="\n".join(self.lines[start : end + 1]),
            language=self.language,
            defines=defines,
        )
