"""How a file's rank follows from its blocks' scores, and what other rules would give.

The history sets count a file at the place of its first block in the search's list: a file
ranks by its *best* block (raised a little by its next two: ``indexer/file_evidence.py``). A
fix usually edits a large file whose words are spread over many blocks, while a small block
elsewhere may say more of the query's words; this tool asks whether ranking files by another
function of their blocks' final scores, or by those scores with one more file-level signal,
puts the fixed file higher.

    python -m bench.retrieval_aggregate --data /tmp/fl/replay --set ripgrep [--set ...] [--learn]

For each saved snapshot (``retrieval_replay save``) it runs ``ranking.search``'s steps once
(``retrieval_why.explain``: the search's own helpers), keeps every candidate block's final
score (the raise of ``file_evidence`` included), and ranks the files again under each rule
below, printing R@1 / R@5 / R@10 per set and pooled, and how many queries each rule moved up
and down against the search's own order (the ``best block`` row, which must equal
``retrieval_replay score``'s figures). ``--learn`` adds a linear file score learned on the
other sets (leave one set out). Prints, asserts nothing else.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sqlite3
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.retrieval import DEPTH  # noqa: E402
from bench.retrieval_metrics import first_rank, summarize  # noqa: E402
from bench.retrieval_replay import bring_up  # noqa: E402
from bench.retrieval_why import explain  # noqa: E402
from indexer import weights as W  # noqa: E402
from indexer.paths import is_test_path  # noqa: E402
from indexer.subjects import subject_of_test  # noqa: E402
from indexer.tokens import fts_match  # noqa: E402

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "to",
        "in",
        "for",
        "on",
        "with",
        "and",
        "or",
        "is",
        "be",
        "by",
        "from",
        "at",
        "as",
        "it",
        "this",
        "that",
        "not",
    ]
)


@dataclass
class Query:
    """One query's candidates: each file's block scores (best first) and file-level facts."""

    set: str
    text: str
    fixed: set[str]
    blocks: dict[str, list[float]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # the search's own file order
    lines: dict[str, int] = field(default_factory=dict)  # a file's last line
    share: dict[str, float] = field(default_factory=dict)  # IDF share of the terms it holds
    words: dict[str, float] = field(default_factory=dict)  # per-word history votes
    features: dict[str, list[float]] = field(default_factory=dict)  # see ``FEATURES``


def collect(conn: sqlite3.Connection, text: str, fixed: set[str], name: str) -> Query:
    chosen, meta, why, fused, terms, _df = explain(conn, text, DEPTH)
    q = Query(name, text, fixed)
    q.order = list(dict.fromkeys(meta[b][0] for b in chosen))
    judged = [b for b in fused if b in meta and ("prior" in why[b] or "test_subject" in why[b])]
    for block_id in judged:  # the candidates the priors and history scored
        q.blocks.setdefault(meta[block_id][0], []).append(fused[block_id])
    for scores in q.blocks.values():
        scores.sort(reverse=True)
    best: dict[str, int] = {}
    for block_id in sorted(judged, key=lambda b: -fused[b]):
        best.setdefault(meta[block_id][0], block_id)
    paths = sorted(q.blocks)
    ids: dict[int, str] = {}
    for path in paths:
        row = conn.execute(
            "SELECT f.id, max(l.end_line) FROM files f JOIN block_rows r ON r.file_id = f.id"
            " JOIN block_lines l ON l.id = r.id WHERE f.path = ?",
            (path,),
        ).fetchone()
        if row and row[0] is not None:
            ids[row[0]] = path
            q.lines[path] = row[1] or 1
    total = conn.execute("SELECT count(*) FROM files").fetchone()[0] or 1
    weight_sum, held = 0.0, defaultdict(float)
    for term in terms:
        try:
            rows = conn.execute(
                "SELECT rowid FROM files_fts WHERE files_fts MATCH ?", (fts_match([term]),)
            ).fetchall()
        except sqlite3.OperationalError:  # a term of several tokens: the list has no positions
            continue
        if not rows:
            continue
        idf = math.log(1 + (total - len(rows) + 0.5) / (len(rows) + 0.5))
        weight_sum += idf
        for (rowid,) in rows:
            if rowid in ids:
                held[ids[rowid]] += idf
    q.share = {p: held[p] / weight_sum for p in paths} if weight_sum else {}
    q.words = _word_votes(conn, text)
    for path, block_id in best.items():
        q.features[path] = _features(q, path, why[block_id], fused[block_id])
    return q


# What ``--learn`` weighs, per file, from its best block's evidence (``retrieval_why``) and
# the file itself: the block's score before history (``norm``) and each list's reciprocal
# rank x the fusion constant, the log of its priors, the history and recency shares, and
# file facts the search does not use.
FEATURES = [
    "norm",
    "lex",
    "graph",
    "flist",
    "scoped",
    "ln_prior",
    "hist",
    "rec",
    "scope",
    "verbatim",
    "named",
    "ln_blocks",
    "next_two",
    "ln_lines",
    "idf_share",
    "test",
    "word_votes",
]


def _features(q: Query, path: str, why: dict, final: float) -> list[float]:
    def rr(key: str) -> float:
        return W.FUSION_K / (W.FUSION_K + why[key] + 1) if key in why else 0.0

    scores = q.blocks[path]
    return [
        why.get("norm", final),
        rr("lex"),
        rr("graph"),
        rr("flist"),
        rr("scoped"),
        math.log(why.get("prior", 1.0)),
        why.get("hist", 0.0),
        why.get("rec", 0.0),
        float("scope" in why),
        float("verbatim" in why),
        float("named" in why),
        math.log(len(scores)),
        sum(scores[1:3]) / scores[0] if scores[0] else 0.0,
        math.log(q.lines.get(path, 1)),
        q.share.get(path, 0.0),
        float(is_test_path(path)),
        q.words.get(path, 0.0) / max([*q.words.values(), 1e-9]),
    ]


def learn(train: list[Query], l2: float = 0.01, rounds: int = 300) -> list[float]:
    """Weights of a linear file score by pairwise logistic regression: the fixed file against
    each other file of the first 20, features scaled by their mean absolute difference."""
    pairs = []
    for q in train:
        top = [p for p in q.order[:20] if p in q.features]
        fixed = [p for p in top if p in q.fixed][:1]
        for a in fixed:
            pairs += [
                [x - y for x, y in zip(q.features[a], q.features[b], strict=True)]
                for b in top
                if b not in q.fixed
            ]
    if not pairs:
        return [1.0] + [0.0] * (len(FEATURES) - 1)
    n = len(FEATURES)
    scale = [sum(abs(p[i]) for p in pairs) / len(pairs) or 1.0 for i in range(n)]
    rows = [[p[i] / scale[i] for i in range(n)] for p in pairs]
    w = [1.0] + [0.0] * (n - 1)
    for _ in range(rounds):
        grad = [l2 * x for x in w]
        for row in rows:
            z = sum(a * b for a, b in zip(w, row, strict=True))
            g = -1.0 / (1.0 + math.exp(min(z, 50.0))) / len(rows)
            for i in range(n):
                grad[i] += g * row[i]
        w = [x - 0.5 * d for x, d in zip(w, grad, strict=True)]
    return [x / s for x, s in zip(w, scale, strict=True)]


def learned_order(q: Query, w: list[float]) -> list[str]:
    score = {p: sum(a * b for a, b in zip(w, q.features[p], strict=True)) for p in q.features}
    return sorted(score, key=lambda p: (-score[p], p))


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def _word_votes(conn: sqlite3.Connection, text: str) -> dict[str, float]:
    """Per-word history: each earlier commit sharing a word with the query gives the files it
    touched that word's IDF over the commit's file count; a file's sum is divided by
    log(2 + its commits)."""
    subjects = {
        cid: _words(m.split("\n", 1)[0])
        for cid, m in conn.execute("SELECT id, message FROM commits")
    }
    touched: dict[int, list[str]] = defaultdict(list)
    for cid, path in conn.execute("SELECT commit_id, path FROM commit_files"):
        touched[cid].append(path)
    df = Counter(w for ws in subjects.values() for w in ws)
    churn = Counter(p for ps in touched.values() for p in ps)
    asked, votes = _words(text), defaultdict(float)
    for cid, ws in subjects.items():
        files = touched.get(cid, [])
        if not 0 < len(files) <= 30:
            continue
        for word in asked & ws:
            for path in files:
                votes[path] += math.log(1 + len(subjects) / df[word]) / len(files)
    return {p: v / math.log(2 + churn[p]) for p, v in votes.items()}


Rule = Callable[[Query, str, list[float]], float]


def _test_subjects(q: Query, weight: float) -> dict[str, float]:
    """A test file among the first 15 candidates lends weight x its score to the file of its
    subject's name (``test/unit/adapters/http.js`` -> ``lib/adapters/http.js``)."""
    out: dict[str, float] = {}
    stems: dict[str, list[str]] = defaultdict(list)
    for path in q.blocks:
        if not is_test_path(path):
            stems[path.rsplit("/", 1)[-1].split(".", 1)[0].lower()].append(path)
    for path in q.order[:15]:
        if path in q.blocks and is_test_path(path):
            name = path.rsplit("/", 1)[-1]
            subject = (subject_of_test(path) or name.split(".", 1)[0]).lower()
            for other in stems.get(subject, []):
                out[other] = max(out.get(other, 0.0), weight * q.blocks[path][0])
    return out


def rules() -> dict[str, Rule]:
    out: dict[str, Rule] = {"best block (the search's order)": lambda q, p, s: s[0]}
    for a in (0.05, 0.1, 0.2, 0.5):
        out[f"best + {a} x next two"] = lambda q, p, s, a=a: s[0] + a * sum(s[1:3])
        out[f"best + {a} x all others"] = lambda q, p, s, a=a: s[0] + a * sum(s[1:])
    for b in (0.02, 0.05, 0.1, 0.2):
        out[f"best x (1 + {b} ln(1 + lines/100))"] = lambda q, p, s, b=b: (
            s[0] * (1 + b * math.log1p(q.lines.get(p, 1) / 100))
        )
    for g in (0.1, 0.2, 0.5, 1.0):
        out[f"best x (1 + {g} x IDF share held)"] = lambda q, p, s, g=g: (
            s[0] * (1 + g * q.share.get(p, 0.0))
        )
    for g in (0.05, 0.1, 0.2, 0.3):
        out[f"best + {g} x word votes / best file's"] = lambda q, p, s, g=g: (
            s[0] + g * q.words.get(p, 0.0) / max([q.words.get(f, 0.0) for f in q.blocks] + [1e-9])
        )
    return out


def rank_files(q: Query, rule: Rule, lent: dict[str, float] | None = None) -> list[str]:
    scores = {p: rule(q, p, s) for p, s in q.blocks.items()}
    for path, score in (lent or {}).items():
        scores[path] = max(scores[path], score)
    return sorted(scores, key=lambda p: (-scores[p], p))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval_aggregate")
    parser.add_argument("--data", type=Path, required=True, help="retrieval_replay save's folder")
    parser.add_argument("--set", action="append", required=True)
    parser.add_argument(
        "--learn",
        action="store_true",
        help="also a linear file score learned on the other sets (leave one set out)",
    )
    args = parser.parse_args(argv)
    queries: list[Query] = []
    for name in args.set:
        listing = args.data / name / "queries.json"
        if not listing.is_file():
            print(f"error: no saved set {name} in {args.data}", file=sys.stderr)
            return 2
        for q in json.loads(listing.read_text(encoding="utf-8")):
            db = args.data / name / f"{q['qid']}.db"
            if not db.exists():
                continue
            bring_up(db)
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                queries.append(collect(conn, q["text"], set(q["files"]), name))
            finally:
                conn.close()
    base = {id(q): first_rank([f in q.fixed for f in q.order]) for q in queries}
    variants: list[tuple[str, Callable[[Query], list[str]]]] = [
        (label, lambda q, r=r: rank_files(q, r)) for label, r in rules().items()
    ]
    for w in (0.5, 1.0, 1.5):
        variants.append(
            (
                f"test file lends {w} x its score to its subject",
                lambda q, w=w: rank_files(q, lambda q, p, s: s[0], _test_subjects(q, w)),
            )
        )
    if args.learn:
        sets = sorted({q.set for q in queries})
        weights = {s: learn([q for q in queries if q.set != s]) for s in sets}
        variants.append(("learned on the other sets", lambda q: learned_order(q, weights[q.set])))
    for label, order in variants:
        per: dict[str, list[int | None]] = defaultdict(list)
        up = down = 0
        for q in queries:
            rank = first_rank([f in q.fixed for f in order(q)[:DEPTH]]) if q.blocks else None
            per[q.set].append(rank)
            was = base[id(q)]
            if rank != was:
                up, down = (up + 1, down) if (rank or 999) < (was or 999) else (up, down + 1)
        cells = []
        for name, ranks in [*per.items(), ("pooled", [r for rs in per.values() for r in rs])]:
            s = summarize(ranks)
            cells.append(f"{name} {s['R@1']:.3f}/{s['R@5']:.3f}/{s['R@10']:.3f}")
        print(f"{label:<44} " + "  ".join(cells) + f"  moved +{up} -{down}")
    if args.learn:
        every = learn(queries)
        top = max(abs(x) for x in every) or 1.0
        print(
            "learned on all sets: "
            + ", ".join(f"{name} {x / top:+.2f}" for name, x in zip(FEATURES, every, strict=True))
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
