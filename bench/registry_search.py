"""Registry search quality: recall@3 of `kiln skills search` before and after stemmed OR search.

Run: ``python bench/registry_search.py [--json] [--show-misses]``

Corpus and queries are ``bench/skill_queries.json`` (33 skills: names of real public skills with
descriptions written in their style, two Chinese skills; 40 queries a user might type). Both
methods index the same rows:

- **before**: the earlier search, one FTS5 table with the ``unicode61`` tokenizer and every query
  word required as a prefix (``"w1"* "w2"*``, AND), ranked ``bm25(5, 1)``;
- **after**: the registry's ``SQLiteStore.search`` as shipped (porter stemming, OR semantics
  with stop words dropped, CJK bigrams, ``bm25`` with the name weighted), through the real
  store on a temporary SQLite file.

recall@3 = share of queries with at least one right answer among the first three results.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skills_registry.registry.sqlite_store import SQLiteStore  # noqa: E402

DATA = Path(__file__).with_name("skill_queries.json")


def before(skills: dict[str, str]) -> Any:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE f USING fts5(id UNINDEXED, name, description, tokenize='unicode61')"
    )
    for skill_id, description in skills.items():
        name = skill_id.split("/")[1]
        db.execute(
            "INSERT INTO f VALUES (?, ?, ?)",
            (skill_id, name.replace("-", " ") + " " + name, description),
        )

    def search(query: str) -> list[str]:
        words = re.findall(r"\w+", query)
        fts = " ".join(f'"{w}"*' for w in words[:16])
        if not fts:
            return []
        rows = db.execute(
            "SELECT id FROM f WHERE f MATCH ? ORDER BY bm25(f, 0, 5.0, 1.0) LIMIT 3", (fts,)
        )
        return [r[0] for r in rows]

    return search


def after(skills: dict[str, str], folder: Path) -> Any:
    store = SQLiteStore(folder / "registry.db")
    for skill_id, description in skills.items():
        namespace, name = skill_id.split("/")
        store.add_version(
            {
                "id": skill_id,
                "namespace": namespace,
                "name": name,
                "version": "1.0.0",
                "description": description,
                "publishedAt": "2026-01-01T00:00:00Z",
                "archiveSha256": "0" * 64,
            }
        )

    def search(query: str) -> list[str]:
        return [s["id"] for s in store.search(query, limit=3)[0]]

    return search


def recall(search: Any, queries: list[list[Any]]) -> tuple[float, list[str]]:
    misses = [q for q, wanted in queries if not set(search(q)[:3]) & set(wanted)]
    return 1 - len(misses) / len(queries), misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    skills, queries = data["skills"], data["queries"]
    with tempfile.TemporaryDirectory() as tmp:
        old_recall, old_misses = recall(before(skills), queries)
        new_recall, new_misses = recall(after(skills, Path(tmp)), queries)
    result = {
        "skills": len(skills),
        "queries": len(queries),
        "recall@3": {"before": round(old_recall, 3), "after": round(new_recall, 3)},
        "misses": {"before": old_misses, "after": new_misses},
    }
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    print(f"{len(skills)} skills, {len(queries)} queries")
    print(
        f"recall@3 before (unicode61, AND of prefixes): {old_recall:.3f} ({len(old_misses)} misses)"
    )
    print(
        f"recall@3 after  (porter, OR, BM25, CJK):      {new_recall:.3f} ({len(new_misses)} misses)"
    )
    if args.show_misses:
        print("misses after:", ", ".join(new_misses) or "none")
        print("misses before:", ", ".join(old_misses) or "none")


if __name__ == "__main__":
    main()
