"""Which language a file is, and its tree-sitter parser and query (loaded lazily, cached).

Queries are data files under ``queries/<lang>.scm``; grammars come bundled with
``tree-sitter-language-pack==0.13.0`` so nothing is downloaded at run time.
"""

from __future__ import annotations

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
}

# How a nested body is collapsed in a class skeleton.
BRACE_BODY = "{ ... }"
INDENT_BODY = " ..."
INDENT_LANGUAGES = frozenset({"python", "ruby"})
# Node types attached to the definition that follows them.
ATTACHED_TYPES = frozenset(
    {
        "comment",
        "line_comment",
        "block_comment",
        "decorator",
        "attribute_item",
        "annotation",
        "marker_annotation",
        "inner_attribute_item",
    }
)


def language_for(path: str) -> str:
    """Language name for a path, or ``"text"`` (line-window fallback)."""
    return EXTENSIONS.get(PurePosixPath(path).suffix.lower(), "text")


@dataclass(frozen=True)
class Grammar:
    name: str
    language: Any
    query: Any


_lock = threading.Lock()


@cache
def _load(name: str) -> Grammar:
    import tree_sitter as ts
    import tree_sitter_language_pack as tslp

    language = tslp.get_language(name)  # type: ignore[arg-type]
    source = resources.files("indexer").joinpath("queries", f"{name}.scm").read_text("utf-8")
    return Grammar(name, language, ts.Query(language, source))


def grammar(name: str) -> Grammar | None:
    """The grammar and compiled query for a language; None for the text fallback."""
    if name == "text":
        return None
    with _lock:
        return _load(name)


def new_parser(name: str) -> Any:
    """A fresh parser (parsers are not shared between threads)."""
    import tree_sitter as ts

    g = grammar(name)
    assert g is not None
    return ts.Parser(g.language)
