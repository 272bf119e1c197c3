"""What a grammar brings a language's files: the same tree indexed with the language's
definitions and as text windows (its extensions unmapped, the code otherwise the same).

For each ``LANG=PATH`` tree: files of the language, definitions found, index time, and a
navigational check: a definition's name as words ("count words" for ``countWords``) -> its
file, R@1 and R@5 over the distinct files of the top hits. The names come from this script's
own regular expressions over the source (not from the index under test); only names of two or
three words that one file alone defines are asked, a seeded sample of ``--queries``.

    python -m bench.languages csharp=/tmp/src/MediatR php=/tmp/src/console [--queries 200]

Each tree is copied to a temp folder per run (the index lives in ``<root>/.kiln``).
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.datasets.names import words  # noqa: E402
from indexer import Index  # noqa: E402
from indexer.languages import EXTENSIONS, language_for  # noqa: E402

# Definitions by regular expression, one pattern per language (any group that matched is
# a name): type declarations and functions, as a reader would spot them.
NAMES = {
    "csharp": r"\b(?:class|interface|struct|record|enum)\s+(\w+)"
    r"|^\s*(?:(?:public|private|protected|internal|static|async|override|virtual|abstract|sealed)\s+)+"
    r"[\w<>\[\],.? ]+?\s(\w+)\s*(?:<[^>]*>)?\(",
    "php": r"\b(?:class|interface|trait|enum)\s+(\w+)|\bfunction\s+&?(\w+)\s*\(",
    "kotlin": r"\b(?:class|interface|object)\s+(\w+)|\bfun\s+(?:<[^>]*>\s*)?(?:[\w.<>?]+\.)?(\w+)\s*\(",
    "swift": r"\b(?:class|struct|enum|protocol|actor)\s+(\w+)|\bfunc\s+(\w+)",
    "scala": r"\b(?:class|trait|object)\s+(\w+)|\bdef\s+(\w+)",
    "bash": r"^\s*(?:function\s+)?([\w:.-]+)\s*\(\)|^\s*function\s+([\w:.-]+)",
    "lua": r"\bfunction\s+(?:[\w.]+[.:])?(\w+)\s*\(|(\w+)\s*=\s*function\b",
    "dart": r"\b(?:class|mixin|enum|extension)\s+(\w+)"
    r"|^\s*(?:static\s+)?(?:[A-Z]\w*(?:<[^>]*>)?\??|void|int|bool|double|String)\s+(?:get\s+)?(\w+)"
    r"\s*(?:\([^)]*\))?\s*(?:async\s*)?(?:\{|=>)",
    "elixir": r"^\s*def(?:p|macro|macrop)?\s+(\w+[?!]?)|^\s*defmodule\s+(?:[\w.]+\.)?(\w+)",
    "haskell": r"^(\w+)\s+::|^(?:data|newtype|class)\s+(?:\([^)]*\)\s*=>\s*)?(\w+)",
    "perl": r"^\s*sub\s+(\w+)",
    "julia": r"^\s*function\s+(?:[\w.]+\.)?(\w+!?)|^\s*(?:mutable\s+)?struct\s+(\w+)"
    r"|^(\w+)\([^)]*\)\s*=[^=]",
    "erlang": r"^([a-z]\w*)\([^)]*\)\s*(?:when[^-]*)?->",
    "zig": r"\bfn\s+(\w+)|\bconst\s+(\w+)\s*=\s*(?:extern\s+|packed\s+)?(?:struct|enum|union)\b",
}
# Components: their script's functions, arrow functions and methods (the Options API's
# ``methods: { onClick(event) {``), as in JavaScript.
NAMES["vue"] = NAMES["svelte"] = (
    r"\bfunction\s+(\w+)|\b(?:const|let)\s+(\w+)\s*=\s*(?:async\s*)?(?:\([^)]*\)|\w+)\s*=>"
    r"|^\s+(?!(?:if|for|while|switch|catch|return)\b)(\w+)\s*\([^)]*\)\s*\{"
)


def queries(root: Path, language: str, count: int, seed: int) -> list[tuple[str, str]]:
    """(name as words, the one file defining it) for a seeded sample of the tree's names."""
    pattern = re.compile(NAMES[language], re.MULTILINE)
    by_phrase: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink() or language_for(path.name) != language:
            continue
        rel = path.relative_to(root).as_posix()
        text = path.read_text("utf-8", errors="replace")
        for match in pattern.finditer(text):
            for name in filter(None, match.groups()):
                parts = words(name)
                if 2 <= len(parts) <= 3:
                    by_phrase.setdefault(" ".join(parts), set()).add(rel)
    unique = sorted(p for p, files in by_phrase.items() if len(files) == 1)
    random.Random(seed).shuffle(unique)
    return [(p, next(iter(by_phrase[p]))) for p in unique[:count]]


def run(root: Path, language: str, asked: list[tuple[str, str]], as_text: bool) -> dict:
    """Index a copy of ``root`` (with ``as_text``, the language's extensions unmapped) and
    ask every query."""
    removed = {e: lang for e, lang in EXTENSIONS.items() if lang == language} if as_text else {}
    for ext in removed:
        del EXTENSIONS[ext]  # language_for reads the table: parse workers fork after this
    try:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / root.name
            shutil.copytree(root, copy, symlinks=True)
            with Index(copy) as idx:
                started = time.perf_counter()
                idx.update()
                seconds = time.perf_counter() - started
                conn = sqlite3.connect(idx.db_path)
                files, defs = conn.execute(
                    "SELECT count(DISTINCT f.id), count(d.name) FROM files f "
                    "LEFT JOIN defs d ON d.file_id = f.id WHERE f.path IN "
                    f"({','.join('?' * len(_paths(copy, language)))})",
                    _paths(copy, language),
                ).fetchone()
                conn.close()
                ranks = [_rank(idx, q, rel) for q, rel in asked]
    finally:
        EXTENSIONS.update(removed)
    n = max(len(ranks), 1)
    return {
        "files": files,
        "defs": defs,
        "seconds": seconds,
        "r1": sum(r == 1 for r in ranks) / n,
        "r5": sum(0 < r <= 5 for r in ranks) / n,
    }


def _paths(root: Path, language: str) -> list[str]:
    found = [
        p.relative_to(root).as_posix()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and language_for(p.name) == language
    ]
    return found or [""]


def _rank(idx: Index, query: str, rel: str) -> int:
    """1-based rank of ``rel`` among the distinct files of the top 20 blocks, 0 if absent."""
    seen: list[str] = []
    for hit in idx.search(query, k=20):
        if hit.path not in seen:
            seen.append(hit.path)
    return seen.index(rel) + 1 if rel in seen else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="LANG=PATH, LANG one of " + ", ".join(NAMES))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    trees = []
    for spec in args.trees:  # every argument checked before any work
        language, _, path = spec.partition("=")
        if language not in NAMES or not Path(path).is_dir():
            print(f"error: {spec}: want LANG=FOLDER, LANG one of {', '.join(NAMES)}")
            return 2
        trees.append((language, Path(path)))
    print("| language | tree | files | definitions (text → grammar) | index s (text → grammar) "
          "| queries | R@1 text → grammar | R@5 text → grammar |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for language, root in trees:
        asked = queries(root, language, args.queries, args.seed)
        text = run(root, language, asked, as_text=True)
        grammar = run(root, language, asked, as_text=False)
        print(
            f"| {language} | {root.name} | {grammar['files']} | {text['defs']} → {grammar['defs']} "
            f"| {text['seconds']:.1f} → {grammar['seconds']:.1f} | {len(asked)} "
            f"| {text['r1']:.2f} → {grammar['r1']:.2f} | {text['r5']:.2f} → {grammar['r5']:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
