"""Where in the tree a candidate sits, as ranking evidence: the component a query names and
the folders, crates and packages of a path.

Commit subjects and issue titles in most ecosystems name the component first: ``ignore: fix
handling of **`` (ripgrep's ``ignore`` crate), ``fix(fetch): …`` (axios's fetch adapter),
``[globset] …``, ``grep-printer: …``. That prefix says *where*, and the words after it say
*what*; a lexical match on the rest of the subject in another crate is usually wrong. The
scope's words are compared with the words of a path's folders (``crates/printer/src/
standard.rs`` has ``crates``, ``printer``, ``src``), not its file name: a scope such as
``fix(formdata)`` names a concern, and the files named after it are often not the fix.

Also here: files that describe or build the code rather than implement it, and the query the
code is searched with (tracker keys and change words left out).
"""

from __future__ import annotations

import re
from functools import lru_cache

from indexer import weights as W
from indexer.tokens import query_terms, split_cached

# "scope: …", "type(scope): …", "type(scope)!: …", "[scope] …", at the start of the query.
_SCOPED = re.compile(
    r"^\s*(?:\[(?P<bracket>[^\]]{1,60})\]|(?P<head>[A-Za-z][\w./-]{0,60})\s*"
    r"(?:\((?P<paren>[^)]{1,60})\))?!?:)\s"
)
# Conventional-commit types and the like: the kind of change, not where it is.
_KINDS = frozenset(
    {
        "fix",
        "fixes",
        "fixed",
        "bug",
        "bugfix",
        "hotfix",
        "feat",
        "feature",
        "chore",
        "refactor",
        "perf",
        "build",
        "ci",
        "docs",
        "doc",
        "style",
        "test",
        "tests",
        "revert",
        "security",
        "breaking",
        "change",
        "update",
        "add",
        "remove",
        "improve",
        "deps",
        "note",
        "wip",
        "minor",
        "trivial",
    }
)
_WORD = re.compile(r"[A-Za-z0-9]+")


# Tracker keys (``KAFKA-16448``, ``[JDK-8293]``) and the words that only say a change is a fix.
_TICKET = re.compile(r"\b[A-Z][A-Z0-9]{1,15}-\d+\b")
_CHANGE = re.compile(r"\b(fix(e[sd]|ing)?|bug(s|fix)?|hotfix)\b", re.IGNORECASE)


def code_query(query: str) -> str:
    """The query the code is searched with: a tracker key names a ticket, not code (its digits
    are rare words that match by accident), and with ``CHANGE_WORDS_OUT`` "fix"/"bug" go too
    (in a large Java tree "fix" is rare in code and matches ``FixedKeyRecord``). The history
    step keeps the whole query: follow-up commits of a ticket repeat its key."""
    out = _TICKET.sub(" ", query)
    if W.CHANGE_WORDS_OUT:
        out = _CHANGE.sub(" ", out)
    return out if query_terms(out) else query


def _scope_pieces(query: str) -> list[str]:
    """The text of the component a query names in its prefix (none: empty)."""
    found = _SCOPED.match(query)
    if not found:
        return []
    pieces = [found["bracket"] or "", found["paren"] or ""]
    head = found["head"] or ""
    if head.lower() not in _KINDS:
        pieces.append(head)
    return pieces


def scope_text(query: str) -> str:
    """The component a query names in its prefix, lower-cased as written (``fix(format/html):
    …`` -> ``format/html``, ``ignore: …`` -> ``ignore``); empty when none."""
    return "|".join(p.strip().lower() for p in _scope_pieces(query) if p.strip())


def scope_words(query: str) -> frozenset[str]:
    """Lower-cased words of the component a query names in its prefix (empty when none)."""
    pieces = _scope_pieces(query)
    words = {
        part
        for piece in pieces
        for word in _WORD.findall(piece)
        for part in (word.lower(), *split_cached(word))
        if len(part) > 1 and part not in _KINDS
    }
    return frozenset(words)


@lru_cache(maxsize=65536)
def path_words(path: str) -> frozenset[str]:
    """Lower-cased words of a path's folders (``grep-printer/src/summary.rs``: grep, printer,
    grep-printer, src)."""
    parts = path.split("/")
    words: set[str] = set()
    for seg in parts[:-1]:
        words.add(seg.lower())
        for word in _WORD.findall(seg):
            words.add(word.lower())
            words.update(split_cached(word))
    return frozenset(words)


def scope_match(scope: frozenset[str], path: str) -> float:
    """1.0 when a folder of ``path`` holds one of the scope's words, else 0.0."""
    if not scope:
        return 0.0
    return 1.0 if scope & path_words(path) else 0.0


# Files that describe or build the code rather than implement it: TypeScript declarations
# (``index.d.ts`` repeats every exported name), bundler/test-runner configs, Cargo build scripts,
# and the build manifests other languages write in themselves (Gradle's Kotlin scripts,
# SwiftPM's ``Package.swift``, Mix, Zig, Cabal, Perl's ``Makefile.PL``).
_TOOLING = re.compile(
    r"(\.d\.[cm]?ts|\.(config|conf)\.[cm]?[jt]s|^(gulpfile|gruntfile|jakefile)\.[cm]?js|^build\.rs"
    r"|\.gradle\.kts|^package(@swift-[\d.]+)?\.swift|^mix\.exs|^build\.zig|^setup\.hs|^makefile\.pl)$",
    re.IGNORECASE,
)


@lru_cache(maxsize=65536)  # asked for every candidate of every search
def is_tooling_path(path: str) -> bool:
    return bool(_TOOLING.search(path.rsplit("/", 1)[-1]))


def scope_parts(query: str) -> tuple[str, ...]:
    """The words of the component a query names, as written (``css_formatter`` -> css,
    formatter; ``format/html`` -> format, html), kinds of change left out."""
    words = (w.lower() for piece in _scope_pieces(query) for w in _WORD.findall(piece))
    return tuple(dict.fromkeys(w for w in words if len(w) > 1 and w not in _KINDS))


def _same_word(a: str, b: str) -> bool:
    """``format`` ~ ``formatter``, ``parse`` ~ ``parser``, ``analyzer`` ~ ``analyze`` (a word
    of four letters or more and its longer forms; shorter words only as they are: ``js`` is
    not ``json``)."""
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


@lru_cache(maxsize=65536)
def _folder_words(path: str) -> tuple[frozenset[str], ...]:
    """Each folder's words: its pieces and their camelCase parts, lower-cased."""
    out = []
    for seg in path.split("/")[:-1]:
        words = {w.lower() for w in _WORD.findall(seg)}
        words.update(p for w in _WORD.findall(seg) for p in split_cached(w))
        out.append(frozenset(words))
    return tuple(out)


def folder_holds(parts: tuple[str, ...], path: str) -> bool:
    """Whether one folder of ``path`` holds every word of ``parts`` (``biome_css_formatter``
    holds both words of ``css_formatter``, ``biome_css_parser`` one), ``format`` matching
    ``formatter`` and ``parse`` ``parser``."""
    return any(
        all(any(_same_word(p, w) for w in words) for p in parts) for words in _folder_words(path)
    )


def scope_folder(parts: tuple[str, ...], path: str) -> str | None:
    """The folder of ``path`` holding every word of ``parts``, as a prefix ending in "/"."""
    segs = path.split("/")
    for n, words in enumerate(_folder_words(path)):
        if all(any(_same_word(p, w) for w in words) for p in parts):
            return "/".join(segs[: n + 1]) + "/"
    return None
