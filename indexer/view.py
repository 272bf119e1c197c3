"""What a reader (the agent) sees of a search: ranked blocks shaped to fit a token budget.

A model reads ``search_code`` output, not a ranked list, and only as much of it as its budget
allows; what counts is whether the file it needs is *in* that text. So hits are grouped by
file, in the order of each file's best hit, and every file gets a compact outline first — its
path once, then one line per hit (lines, kind, name, signature) — before any file gets body
lines: the lines of each hit that carry the query's words, best files first, while the budget
lasts. Nothing is repeated: a path is printed once, a signature is not printed again as a body
line. ``bench/budget_recall.py`` measures recall of the fixed file within 2k / 4k / 8k tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from indexer.ranking import Hit
from indexer.tokens import query_terms, split_cached
from kiln_errors.shown import listed

CHARS_PER_TOKEN = 4  # the usual estimate for code and English; budgets are in tokens
HITS_PER_FILE = 4  # outline lines per file; more hits of one file add nothing new
LINES_PER_HIT = 4  # body lines shown under a hit
OUTLINE_SHARE = 0.6  # of the budget, at most, for outlines; the rest for body lines
MAX_LINE = 160  # characters of one shown line
SKELETON_KINDS = ("class", "type", "module")  # their text is not the file's lines 1:1
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


@dataclass
class _File:
    path: str
    hits: list[Hit] = field(default_factory=list)
    outline: list[str] = field(default_factory=list)
    bodies: dict[int, list[str]] = field(default_factory=dict)  # hit index -> body lines


def render(hits: Sequence[Hit], query: str, budget_tokens: int) -> str:
    """Hits grouped by file within ``budget_tokens`` (estimated at 4 characters a token)."""
    budget = budget_tokens * CHARS_PER_TOKEN
    files: dict[str, _File] = {}
    for hit in hits:
        entry = files.setdefault(hit.path, _File(hit.path))
        if len(entry.hits) < HITS_PER_FILE:
            entry.hits.append(hit)
    used = 0
    shown: list[_File] = []
    for entry in files.values():  # outlines, best file first, within their share
        entry.outline = [_outline(h) for h in sorted(entry.hits, key=lambda h: h.start_line)]
        cost = len(entry.path) + 1 + sum(len(line) + 1 for line in entry.outline)
        if used + cost > budget * OUTLINE_SHARE and shown:
            break
        shown.append(entry)
        used += cost
    terms = set(query_terms(query))
    for entry in shown:  # body lines, best file first, while the budget lasts
        ordered = sorted(entry.hits, key=lambda h: h.start_line)
        outlined = [(h.signature or "").split("\n", 1)[0].strip() for h in ordered]
        for i, hit in enumerate(ordered):
            lines = _body(hit, terms)
            if hit.kind in SKELETON_KINDS:  # a member shown with its own outline line: once
                lines = [ln for ln in lines if not _outlined(ln, outlined)]
            cost = sum(len(line) + 1 for line in lines)
            if lines and used + cost <= budget:
                entry.bodies[i] = lines
                used += cost
    out: list[str] = []
    for entry in shown:
        out.append(listed(entry.path))  # a name may hold a newline: one line, escaped
        for i, line in enumerate(entry.outline):
            out.append(line)
            out.extend(entry.bodies.get(i, []))
    return "\n".join(out)


def _outline(hit: Hit) -> str:
    """``  12-40 method Store.get(self, key) -> str``: lines, kind, name and parameters."""
    sig = (hit.signature or "").split("\n", 1)[0]
    sig = sig.split(" #", 1)[0].split(" //", 1)[0].strip().rstrip(":{").strip()
    params = sig[sig.find("(") :] if "(" in sig and hit.kind not in SKELETON_KINDS else ""
    # A text file's chunk is named by its path, which a checkout picks: one line, as listed.
    name = listed(hit.name)
    return _clip(f"  {hit.start_line}-{hit.end_line} {hit.kind} {name}{params}")


def _body(hit: Hit, terms: set[str]) -> list[str]:
    """Up to ``LINES_PER_HIT`` lines of the hit that hold a query word (else its first lines
    after the signature). Numbered with their file line, except in a class skeleton, whose
    collapsed bodies break the numbering."""
    sig = (hit.signature or "").split("\n", 1)[0].strip()
    skeleton = hit.kind in SKELETON_KINDS
    numbered = []
    for n, line in enumerate((hit.text or "").split("\n")):
        text = line.strip()
        repeats = sig and (sig.startswith(text) or text.startswith(sig))
        if text and not repeats and not (n == 0 and skeleton):
            numbered.append((None if skeleton else hit.start_line + n, text))
    matching = [(n, text) for n, text in numbered if terms & _line_terms(text)]
    chosen = (matching or numbered)[:LINES_PER_HIT]
    return [_clip(f"    {n}: {text}" if n is not None else f"    | {text}") for n, text in chosen]


def _outlined(line: str, signatures: list[str]) -> bool:
    text = line.strip().removeprefix("|").strip().removesuffix("...").strip()
    return any(sig and (sig.startswith(text) or text.startswith(sig)) for sig in signatures)


def _line_terms(line: str) -> set[str]:
    words = _WORDS.findall(line)
    found = {w.lower() for w in words}
    for w in words:
        found.update(split_cached(w))
    return found


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"
