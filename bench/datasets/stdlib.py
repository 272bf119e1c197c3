"""The stdlib set: Python standard-library modules with every docstring removed, queried by the
first line of the docstring each public definition used to have.

Docstrings are replaced by ``...`` padded with newlines, so the code still parses and every
definition keeps its line number; the query text is then nowhere in the corpus, which makes this
a fair test of how well identifiers, signatures and bodies alone explain a one-line summary.
Nothing here was used to tune the indexer: the modules and queries are picked by a fixed seed.
"""

from __future__ import annotations

import ast
import random
import re
import shutil
import sysconfig
from pathlib import Path

from bench.datasets import DatasetError, Query, Target

# Folders that are tests, demos, vendored tools or platform glue rather than library code.
_SKIP_DIRS = {
    "test",
    "tests",
    "idlelib",
    "lib2to3",
    "turtledemo",
    "ensurepip",
    "site-packages",
    "dist-packages",
    "__pycache__",
    "__phello__",
    "config-3.11-x86_64-linux-gnu",
}
_MIN_BYTES, _MAX_BYTES = 4_000, 160_000
_SIGNATURE_LIKE = re.compile(r"^[\w.]+\(")


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def eligible_modules(root: Path) -> list[str]:
    """Pure-Python library files of a reasonable size, repo-relative and sorted for determinism."""
    found = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS or part.startswith(("plat-", "config-")) for part in rel.parts):
            continue
        if rel.name.startswith("_") and rel.name != "__init__.py":
            continue
        if rel.name in {"this.py", "antigravity.py"}:
            continue
        if _MIN_BYTES <= path.stat().st_size <= _MAX_BYTES:
            found.append(rel.as_posix())
    return sorted(found)


def strip_docstrings(source: str) -> str:
    """Blank every module/class/function docstring, keeping each line where it was."""
    tree = ast.parse(source)
    lines = source.encode("utf-8").splitlines(keepends=True)
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            spans.append(first.value)
    # Bottom-up so earlier byte offsets stay valid; ast offsets are UTF-8 byte columns.
    for node in sorted(spans, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        l0, l1 = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        prefix = lines[l0][: node.col_offset]
        suffix = lines[l1][node.end_col_offset :].rstrip(b"\r\n")
        replacement = [prefix + b"..." + suffix + b"\n"] + [b"\n"] * (l1 - l0)
        lines[l0 : l1 + 1] = replacement
    return b"".join(lines).decode("utf-8")


def _definitions(
    tree: ast.Module,
) -> list[tuple[str, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Public top-level functions and classes, plus public methods of public classes."""
    out: list[tuple[str, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name.startswith("_"):
                continue
            out.append((node.name, node))
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(
                        sub, ast.FunctionDef | ast.AsyncFunctionDef
                    ) and not sub.name.startswith("_"):
                        out.append((f"{node.name}.{sub.name}", sub))
    return out


def _query_text(node: ast.AST) -> str | None:
    doc = ast.get_docstring(node)  # type: ignore[arg-type]
    if not doc:
        return None
    first = doc.strip().splitlines()[0].strip()
    words = re.findall(r"[A-Za-z]{2,}", first)
    if len(words) < 4 or len(first) > 200 or _SIGNATURE_LIKE.match(first):
        return None
    return first


def _check_lines(original: ast.Module, stripped: ast.Module) -> bool:
    def lines(tree: ast.Module) -> list[int]:
        return [
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        ]

    return lines(original) == lines(stripped)


_MARKER = ".kiln-bench-corpus"


def _reset(out_dir: Path) -> None:
    """Empty a corpus dir we made before; never delete a folder someone else filled."""
    if out_dir.exists() and any(out_dir.iterdir()):
        if not (out_dir / _MARKER).exists():
            raise DatasetError(
                f"refusing to overwrite {out_dir}: not a corpus this benchmark wrote",
                hint="pass an empty or new folder to --data",
            )
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / _MARKER).write_text("written by bench/retrieval.py; safe to delete\n")


def build(
    out_dir: Path,
    *,
    modules: int = 60,
    queries: int = 300,
    seed: int = 1234,
    source_root: Path | None = None,
) -> list[Query]:
    """Write a stripped copy of ``modules`` stdlib files into ``out_dir``; return the queries."""
    root = source_root or stdlib_root()
    candidates = eligible_modules(root)
    if not candidates:
        raise DatasetError(
            f"no Python modules found under {root}",
            hint="the stdlib set needs a CPython install with its .py sources",
        )
    rng = random.Random(seed)
    chosen = sorted(rng.sample(candidates, min(modules, len(candidates))))
    _reset(out_dir)
    pool: list[Query] = []
    for rel in chosen:
        source = (root / rel).read_text(encoding="utf-8")
        try:
            tree = ast.parse(source)
            stripped = strip_docstrings(source)
            if not _check_lines(tree, ast.parse(stripped)):
                continue
        except (SyntaxError, ValueError):
            continue
        dest = out_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(stripped, encoding="utf-8")
        for qual, node in _definitions(tree):
            text = _query_text(node)
            if text is None:
                continue
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            target = Target(rel, node.lineno, first, node.end_lineno or node.lineno)
            pool.append(Query(f"{rel}::{qual}", text, frozenset({rel}), (target,)))
    # A summary shared by several definitions ("Return a copy.") has no single right answer.
    counts: dict[str, int] = {}
    for q in pool:
        counts[q.text.lower()] = counts.get(q.text.lower(), 0) + 1
    unique = [q for q in pool if counts[q.text.lower()] == 1]
    picked = rng.sample(unique, min(queries, len(unique)))
    return sorted(picked, key=lambda q: q.qid)
