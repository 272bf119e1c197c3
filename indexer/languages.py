"""Which language a file is, and its tree-sitter parser and query (loaded lazily, cached).

Queries are data files under ``queries/<lang>.scm``; grammars come bundled with
``tree-sitter-language-pack==0.13.0`` so nothing is downloaded at run time.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import PurePosixPath
from typing import Any

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".rb": "ruby",
    ".mm": "objc",
    ".cs": "csharp",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    ".sh": "bash",
    ".bash": "bash",
    ".lua": "lua",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".zig": "zig",
    ".hs": "haskell",
    ".pl": "perl",
    ".pm": "perl",
    ".t": "perl",
    ".r": "r",
    ".ml": "ocaml",
    ".mli": "ocaml",
    ".ps1": "powershell",
    ".psm1": "powershell",
    ".jl": "julia",
    ".erl": "erlang",
    ".hrl": "erlang",
    ".tf": "hcl",
    ".hcl": "hcl",
    ".vue": "vue",
    ".svelte": "svelte",
}
# Single-file components: their ``<script>`` blocks are read with a script grammar
# (``indexer.components``); they have no query of their own.
COMPONENT_LANGUAGES = frozenset({"vue", "svelte"})

# How a nested body is collapsed in a class skeleton.
BRACE_BODY = "{ ... }"
INDENT_BODY = " ..."
INDENT_LANGUAGES = frozenset({"python", "ruby", "elixir"})
# Languages that write one function as several clauses: adjacent clauses are one definition.
CLAUSE_LANGUAGES = frozenset({"haskell", "elixir"})
# Node types attached to the definition that follows them.
ATTACHED_TYPES = frozenset(
    {
        "comment",
        "line_comment",
        "block_comment",
        "multiline_comment",
        "documentation_comment",
        "doc_comment",
        "haddock",
        "signature",  # Haskell: a function's type signature
        "string_literal",  # Julia: a docstring before a definition
        "unary_operator",  # Elixir's module attributes before a def: @doc, @spec, @impl
        "decorator",
        "attribute_item",
        "annotation",
        "marker_annotation",
        "inner_attribute_item",
    }
)

# Nodes a grammar hangs the comment after them on (Kotlin, Haskell: the doc comment of the first
# class after the imports ends the last import): ``attached_start`` looks inside them.
COMMENT_HOSTS = frozenset({"import_list", "import_header", "package_header", "imports"})
# Lists a grammar wraps its definitions in, the comment before the first one left outside
# (HCL's body, Haskell's declarations, PowerShell's statement list).
COMMENT_WRAPPERS = frozenset({"body", "declarations", "statement_list"})


# A script without an extension, by the interpreter its ``#!`` line names.
INTERPRETERS: dict[str, str] = {
    "sh": "bash",
    "bash": "bash",
    "dash": "bash",
    "ksh": "bash",
    "zsh": "bash",
    "python": "python",
    "ruby": "ruby",
    "perl": "perl",
    "node": "javascript",
}


def language_for(path: str) -> str:
    """Language name for a path, or ``"text"`` (line-window fallback)."""
    return EXTENSIONS.get(PurePosixPath(path).suffix.lower(), "text")


# Files whose language their content tells: no extension (a ``#!`` line), ``.m`` (Objective-C,
# or MATLAB: no grammar); the language each can turn out to be.
SNIFFED = {"": frozenset(INTERPRETERS.values()), ".m": frozenset({"objc"})}
_OBJC = re.compile(rb"^[ \t]*(?:@interface|@implementation|@protocol|#import)\b", re.MULTILINE)


def language_of(path: str, data: bytes) -> str:
    """``language_for``; a file without an extension, by its ``#!`` line (``#!/bin/sh``,
    ``#!/usr/bin/env python3``); a ``.m`` file with Objective-C's ``@interface``,
    ``@implementation`` or ``#import`` (MATLAB has none). The index records it for the
    file's row and its blocks alike (``language_changes`` re-reads such files when it may
    have changed)."""
    language = language_for(path)
    suffix = PurePosixPath(path).suffix
    if language != "text" or suffix not in SNIFFED:
        return language
    if suffix == ".m":
        return "objc" if _OBJC.search(data, 0, 65536) else "text"
    if not data.startswith(b"#!"):
        return language
    words = data[2:256].split(b"\n", 1)[0].decode("latin-1").split()
    names = [w.rsplit("/", 1)[-1] for w in words if not w.startswith("-")]
    if names and names[0] == "env":
        names = names[1:]
    program = re.sub(r"[\d.]+$", "", names[0]) if names else ""
    return INTERPRETERS.get(program, "text")


@dataclass(frozen=True)
class Grammar:
    name: str
    language: Any
    query: Any
    # per pattern of ``query``: its ``@reference.*`` capture names, or None for a pattern
    # that captures a definition (read from the pattern's own text once, so the chunker need
    # not look at every match's capture names: most of a file's matches are references)
    references: tuple[tuple[str, ...] | None, ...] = ()


_lock = threading.Lock()


@cache
def _load(name: str) -> Grammar:
    import tree_sitter as ts
    import tree_sitter_language_pack as tslp

    language = tslp.get_language(name)  # type: ignore[arg-type]
    source = resources.files("indexer").joinpath("queries", f"{name}.scm").read_bytes()
    query = ts.Query(language, source.decode("utf-8"))
    references: list[tuple[str, ...] | None] = []
    for i in range(query.pattern_count):
        pattern = source[query.start_byte_for_pattern(i) : query.end_byte_for_pattern(i)]
        code = b"\n".join(ln for ln in pattern.split(b"\n") if not ln.lstrip().startswith(b";"))
        names = [n.decode() for n in re.findall(rb"@([\w.]+)", code)]
        refs = tuple(dict.fromkeys(n for n in names if n.startswith("reference.")))
        references.append(None if any(n.startswith("definition.") for n in names) else refs)
    return Grammar(name, language, query, tuple(references))


def grammar(name: str) -> Grammar | None:
    """The grammar and compiled query for a language; None for the text fallback and for
    components (``indexer.components`` parses them)."""
    if name == "text" or name in COMPONENT_LANGUAGES:
        return None
    with _lock:
        return _load(name)


def new_parser(name: str) -> Any:
    """A fresh parser (parsers are not shared between threads)."""
    import tree_sitter as ts

    g = grammar(name)
    assert g is not None
    return ts.Parser(g.language)
