"""The unit of retrieval (a block) and the language-free shaping rules applied to blocks.

A block is what a search returns and what the agent reads: a function, a method, a class
skeleton, a module preamble, or a line window of a non-code file. Shapes are bounded so a
result fits in a model's context: oversized pieces are split, tiny siblings merged.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

# Shape limits (chunking, not ranking: ranking constants live in weights.py).
MAX_BLOCK_LINES = 150  # a longer body is split at statement boundaries
TINY_LINES = 2  # siblings this short (one-liners, getters) are merged ...
MERGE_MAX_LINES = 40  # ... into a block of at most this many lines
MERGE_MAX_GAP = 2  # blank/comment lines allowed between merged siblings
WINDOW_LINES = 60  # line windows for files without a grammar
MAX_SIGNATURE = 400
MAX_DOCSTRING = 2000


@dataclass
class Block:
    kind: str  # function | method | class | type | module | text
    name: str  # qualified name; merged siblings are joined with ", "
    signature: str
    docstring: str
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str
    language: str
    defines: list[str] = field(default_factory=list)  # short names defined here
    refs: set[str] = field(default_factory=set)  # names referenced (graph edges)
    mergeable: bool = False

    @property
    def hash(self) -> str:
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hashlib.blake2b(
                self.text.encode("utf-8", "replace"), digest_size=8
            ).hexdigest()
            self.__dict__["_hash"] = cached
        return cached

    @property
    def lines(self) -> int:
        return self.end_line - self.start_line + 1


BOM = "\ufeff"  # a byte order mark: what a file saved on Windows often starts with


def first_line(line: str) -> str:
    """A line as a block's signature: stripped, without a byte order mark (``str.strip``
    keeps it: `kiln search` showed ``\ufeffpublic class Order``)."""
    return line.lstrip(BOM).strip()[:MAX_SIGNATURE]


def module_name(path: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``: the scope of a file's top-level blocks."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return stem.replace("/", ".")


def line_windows(lines: list[str], name: str, language: str) -> list[Block]:
    """Fallback for files without a grammar: fixed windows, blank-only windows dropped."""
    blocks = []
    for start in range(0, len(lines), WINDOW_LINES):
        chunk = lines[start : start + WINDOW_LINES]
        while chunk and not chunk[-1].strip():
            chunk.pop()
        if not any(line.strip() for line in chunk):
            continue
        first = next(i for i, line in enumerate(chunk) if line.strip())
        blocks.append(
            Block(
                kind="text",
                name=name,
                signature=first_line(chunk[first]),
                docstring="",
                start_line=start + first + 1,
                end_line=start + len(chunk),
                text="\n".join(chunk[first:]),
                language=language,
            )
        )
    return blocks


def merge_tiny(blocks: list[Block], lines: list[str]) -> list[Block]:
    """Merge runs of adjacent tiny siblings (getters, one-liners) into one block."""
    out: list[Block] = []
    run: list[Block] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run:
            first, last = run[0], run[-1]
            out.append(
                Block(
                    kind=first.kind,
                    name=", ".join(b.name for b in run),
                    signature="\n".join(b.signature for b in run)[:MAX_SIGNATURE],
                    docstring="\n".join(b.docstring for b in run if b.docstring)[:MAX_DOCSTRING],
                    start_line=first.start_line,
                    end_line=last.end_line,
                    text="\n".join(lines[first.start_line - 1 : last.end_line]),
                    language=first.language,
                    defines=[n for b in run for n in b.defines],
                    refs=set().union(*(b.refs for b in run)),
                )
            )
        run.clear()

    for block in blocks:
        fits = (
            run
            and block.mergeable
            and block.start_line - run[-1].end_line - 1 <= MERGE_MAX_GAP
            and block.end_line - run[0].start_line + 1 <= MERGE_MAX_LINES
        )
        if fits:
            run.append(block)
            continue
        flush()
        if block.mergeable and block.lines <= TINY_LINES:
            run.append(block)
        else:
            out.append(block)
    flush()
    return out
