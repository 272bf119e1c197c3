"""Seed a registry with many skills fast, for ``registry_load.py``.

A pool of real skills goes through the real pipeline (``build_release``: validate, hash, scan,
sign; archive stored; ``add_version``). The bulk of the catalogue is then written straight into
the store's tables (COPY on PostgreSQL, one transaction on SQLite): documents cloned from the
real ones under new ids and descriptions, re-signed with the registry key, sharing the pool's
archives. Searching and listing see ordinary rows; only the real pool is downloaded/installed.
"""

from __future__ import annotations

import json
import random
from typing import Any

from skills_registry.archive import ArchiveContents, build_archive
from skills_registry.registry.publish import build_release
from skills_registry.registry.signing import Signer
from skills_registry.registry.sqlite_schema import search_text
from skills_registry.registry.storage import BlobStore, MetadataStore, now_iso

WORDS = [
    "pdf",
    "excel",
    "chart",
    "lint",
    "yaml",
    "docker",
    "deploy",
    "review",
    "test",
    "api",
    "graphql",
    "sql",
    "schema",
    "migrate",
    "python",
    "rust",
    "go",
    "typescript",
    "react",
    "css",
    "design",
    "brand",
    "slides",
    "report",
    "invoice",
    "email",
    "calendar",
    "security",
    "audit",
    "license",
    "cloud",
    "kubernetes",
    "terraform",
    "logs",
    "metrics",
    "trace",
    "cache",
    "queue",
    "search",
    "index",
    "embed",
    "translate",
    "summarize",
    "diagram",
    "markdown",
    "latex",
    "notebook",
    "data",
    "clean",
    "scrape",
]


def _vocabulary(size: int = 1000) -> list[str]:
    """The 50 topic words plus pronounceable made-up words (a catalogue's long tail)."""
    rng = random.Random(13)
    words, seen = list(WORDS), set(WORDS)
    while len(words) < size:
        word = "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(3))
        if word not in seen and not any(word.startswith(w) or w.startswith(word) for w in WORDS):
            seen.add(word)
            words.append(word)
    return words


VOCAB = _vocabulary()


def describe(rng: random.Random) -> str:
    """Eight distinct words drawn uniformly from ``VOCAB``: each word is in ~0.8% of skills."""
    return " ".join(rng.sample(VOCAB, 8)).capitalize() + "."


def skill_archive(name: str, rng: random.Random, body_bytes: int = 0) -> bytes:
    desc = describe(rng)
    files = {
        "SKILL.md": f"---\nname: {name}\ndescription: {desc}\n---\n# {name}\n\nUse it well.\n".encode()
    }
    per = body_bytes // 10
    for i in range(10 if body_bytes else 0):
        text = " ".join(rng.choice(WORDS) for _ in range(per // 4)).encode()
        files[f"reference/part{i}.md"] = text[:per]
    return build_archive(ArchiveContents(name, files))


def real_pool(
    store: MetadataStore, blobs: BlobStore, signer: Signer, count: int
) -> list[dict[str, Any]]:
    rng = random.Random(5)
    docs = []
    for i in range(count):
        name = f"real-{rng.choice(WORDS)}-{i}"
        archive = skill_archive(name, rng)
        doc = build_release(f"pool/{name}", "1.0.0", archive, signer)
        blobs.put(archive)
        store.add_version(doc)
        docs.append(doc)
    return docs


def clones(pool: list[dict[str, Any]], count: int, signer: Signer) -> list[dict[str, Any]]:
    rng = random.Random(7)
    out = []
    for i in range(count):
        base = pool[i % len(pool)]
        name = f"{rng.choice(VOCAB)}-{rng.choice(VOCAB)}-{i}"
        doc = {
            **base,
            "id": f"ns{i % 50}/{name}",
            "namespace": f"ns{i % 50}",
            "name": name,
            "description": describe(rng),
            "publishedAt": now_iso(),
        }
        sig = {"keyId": signer.key_id, "algorithm": "ed25519"}
        sig["signature"] = signer.sign(doc["id"], "1.0.0", doc["archiveSha256"])
        doc["signatures"] = [sig]
        sig["document"] = signer.sign_document(doc)
        out.append(doc)
    return out


def _rows(docs: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (d["id"], d["namespace"], d["name"], d["description"], d["publishedAt"], d) for d in docs
    ]


def bulk_sqlite(store: Any, docs: list[dict[str, Any]]) -> None:
    with store.transaction() as db:
        start = int(db.execute("SELECT coalesce(max(pk), 0) FROM skills").fetchone()[0]) + 1
        rows = _rows(docs)
        db.executemany(
            "INSERT INTO skills (pk, id, namespace, name, description, latest, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, '1.0.0', ?, ?)",
            [(start + i, r[0], r[1], r[2], r[3], r[4], r[4]) for i, r in enumerate(rows)],
        )
        db.executemany(
            "INSERT INTO skills_fts (rowid, name, description) VALUES (?, ?, ?)",
            [(start + i, *search_text(r[2], r[3])) for i, r in enumerate(rows)],
        )
        db.executemany(
            "INSERT INTO versions (skill_id, version, status, status_reason, published_at, doc,"
            " archive_sha256) VALUES (?, '1.0.0', 'active', '', ?, ?, ?)",
            [(r[0], r[4], json.dumps(r[5], sort_keys=True), r[5]["archiveSha256"]) for r in rows],
        )
        db.executemany(
            "INSERT INTO dist_tags VALUES (?, 'latest', '1.0.0')", [(r[0],) for r in rows]
        )
        db.executemany(
            "INSERT INTO changes (skill_id, version, kind, at) VALUES (?, '1.0.0', 'publish', ?)",
            [(r[0], r[4]) for r in rows],
        )


def bulk_postgres(store: Any, docs: list[dict[str, Any]]) -> None:
    rows = _rows(docs)
    gin = ("skills_search", "skills_trgm", "skills_search_names")
    with store.pool.connection() as conn:  # batch the GIN inserts, merged by the VACUUM below
        for index in gin:
            conn.execute(f"ALTER INDEX {index} SET (fastupdate = on)")
    with store.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
        with cur.copy(
            "COPY skills (id, namespace, name, description, latest, created_at, updated_at,"
            " search_name, search_desc) FROM STDIN"
        ) as copy:
            for r in rows:
                copy.write_row(
                    (r[0], r[1], r[2], r[3], "1.0.0", r[4], r[4], *search_text(r[2], r[3]))
                )
        with cur.copy(
            "COPY versions (skill_id, version, status, status_reason, published_at, doc,"
            " archive_sha256) FROM STDIN"
        ) as copy:
            for r in rows:
                doc = json.dumps(r[5], sort_keys=True)
                copy.write_row((r[0], "1.0.0", "active", "", r[4], doc, r[5]["archiveSha256"]))
        with cur.copy("COPY dist_tags (skill_id, tag, version) FROM STDIN") as copy:
            for r in rows:
                copy.write_row((r[0], "latest", "1.0.0"))
        with cur.copy("COPY changes (skill_id, version, kind, at) FROM STDIN") as copy:
            for r in rows:
                copy.write_row((r[0], "1.0.0", "publish", r[4]))
    with store.pool.connection() as conn:  # autocommit: VACUUM cannot run in a transaction
        conn.execute("VACUUM ANALYZE skills")
        for index in gin:
            conn.execute(f"SELECT gin_clean_pending_list('{index}'::regclass)")
            conn.execute(f"ALTER INDEX {index} SET (fastupdate = off)")
        # COPY and VACUUM go through small ring buffers, so the table would start cold in
        # PostgreSQL's cache; a registry that has been serving for a while has it warm.
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        for relation in ("skills", "skills_pkey", *gin):
            conn.execute("SELECT pg_prewarm(%s)", (relation,))
