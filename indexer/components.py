"""Single-file components (Vue ``.vue``, Svelte ``.svelte``): the code of the ``<script>``
blocks, chunked with the JavaScript or TypeScript grammar at the lines of the original file.

The file is read by its own grammar (``vue``, ``svelte``: bundled like the others) only to find
its top-level ``<script>`` elements, so a ``<script>`` inside the template or an HTML comment
is no code; then one parser reads just those elements' text (``Parser.included_ranges``: the
tree's nodes keep their byte offsets and rows in the whole file) and the usual chunker cuts it.
A ``lang="ts"`` block is TypeScript, ``lang="tsx"`` TSX, anything else JavaScript (with JSX);
a file whose blocks say different languages is read with the widest one (TSX, then
TypeScript). Every line no definition holds (the template, the style, the script's imports)
becomes a module part as in any file; the first one also defines the component's name (the
file's stem, ``UserCard.vue`` -> ``UserCard``, ``user-card.vue`` -> ``UserCard``), which
other files import and name in their templates. An edit re-parses the script incrementally (``component_edits``) and chunks the
whole file again: a component is small.
"""

from __future__ import annotations

import re
import threading
from pathlib import PurePosixPath
from typing import Any

from indexer.blocks import Block

# Bump when what this module makes of a component changes: it is in the language digests
# (``language_changes``), so an existing index re-reads its components and nothing else.
VERSION = "2"
# The grammars a script block can be read with, widest last.
SCRIPT_LANGUAGES = ("javascript", "typescript", "tsx")
_LANG = re.compile(rb"""(?<![\w:-])lang\s*=\s*["']?([\w-]+)""", re.IGNORECASE)  # not data-lang
_TYPE = re.compile(rb"""(?<![\w:-])type\s*=\s*["']?([\w/+.-]+)""", re.IGNORECASE)
_SCRIPT_TYPES = {b"module", b"text/javascript", b"application/javascript", b"text/typescript"}
_BY_LANG = {b"ts": "typescript", b"typescript": "typescript", b"tsx": "tsx"}
_NOT_SCRIPT = {b"coffee", b"coffeescript", b"livescript"}
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_local = threading.local()


def _parser(key: str) -> Any:
    """This thread's parser for a host grammar or a script grammar (``key``)."""
    parsers = _local.__dict__.setdefault("parsers", {})
    if key not in parsers:
        import tree_sitter as ts
        import tree_sitter_language_pack as tslp

        parsers[key] = ts.Parser(tslp.get_language(key))  # type: ignore[arg-type]
    return parsers[key]


def scripts(language: str, data: bytes) -> tuple[str, list[Any]]:
    """The grammar to read ``data``'s script blocks with and their text's ranges (in order)."""
    import tree_sitter as ts

    root = _parser(language).parse(data).root_node
    ranges: list[Any] = []
    widest = 0
    for element in root.children:
        if element.type not in ("script_element", "ERROR"):  # ERROR: a <script> never closed
            continue
        tag = next((c for c in element.children if c.type == "start_tag"), None)
        body = next((c for c in element.children if c.type == "raw_text"), None)
        if tag is None or body is None or body.end_byte <= body.start_byte:
            continue
        name = tag.child(1) if tag.child_count > 1 else None
        if name is None or name.type != "tag_name" or name.text.lower() != b"script":
            continue
        attrs = data[tag.start_byte : tag.end_byte]
        kind = _TYPE.search(attrs)
        if kind is not None and kind.group(1).lower() not in _SCRIPT_TYPES:
            continue  # a JSON payload, a template: no code
        lang = _LANG.search(attrs)
        said = lang.group(1).lower() if lang else b""
        if said in _NOT_SCRIPT:
            continue
        widest = max(widest, SCRIPT_LANGUAGES.index(_BY_LANG.get(said, "javascript")))
        ranges.append(ts.Range(body.start_point, body.end_point, body.start_byte, body.end_byte))
    return SCRIPT_LANGUAGES[widest], ranges


def script_tree(language: str, data: bytes, old: Any = None) -> tuple[str, Any, bool]:
    """The script grammar's name, its tree of ``data``'s script blocks only (a file without
    one: the tree of nothing, so every line is a module part), and whether there were any.
    ``old``, such a triple of the file's last version with its tree already moved along with
    the edit (``Tree.edit``), is re-parsed incrementally when it read the same grammar."""
    script, ranges = scripts(language, data)
    parser = _parser(script)
    if not ranges:
        return script, parser.parse(b""), False
    parser.included_ranges = ranges
    try:
        tree = None
        if old is not None and old[0] == script and old[2]:
            tree = parser.parse(data, old_tree=old[1])
            if tree.root_node.has_error:  # error recovery may differ from a fresh parse's
                tree = None
        return script, tree or parser.parse(data), True
    finally:
        parser.included_ranges = []  # reset: the next file's ranges may not fit this one


def name_component(path: str, blocks: list[Block], language: str) -> list[Block]:
    """The component's blocks as its own language; the first module part defines its name."""
    stem = PurePosixPath(path).name.split(".", 1)[0]
    if "-" in stem:  # user-card.vue is imported and used as UserCard
        stem = "".join(part[:1].upper() + part[1:] for part in stem.split("-"))
    named = not _IDENTIFIER.fullmatch(stem)
    for b in blocks:
        b.language = language
        if not named and b.kind == "module":
            b.defines.append(stem)
            named = True
    return blocks
