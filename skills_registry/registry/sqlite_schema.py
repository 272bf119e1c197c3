"""The registry database's schema as named migrations (sqlite-migrate), plus its search text.

Each migration is a function recorded in ``_sqlite_migrations`` once applied; tables are
created through sqlite-utils, virtual (FTS5) tables with plain SQL. Every migration is
idempotent, so a database written by the earlier hand-rolled migrator (which recorded
``m001_initial`` in ``_migrations``) upgrades in place.

Search text: names and descriptions go into one FTS5 table with the porter stemmer, so
``documents`` finds ``document``. CJK has no spaces between words and most Chinese words are
two characters, which a trigram index cannot match; each CJK run is indexed (and queried) as
its overlapping character bigrams instead, the way Lucene's CJK analyzer does.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from kiln_errors.sqlite_common import (
    MIGRATIONS_TABLE,
    enable_wal,
    immediate,
    is_corrupt,
    load_sqlite_utils,
)
from skills_registry.registry.errors import NotARegistry
from skills_registry.registry.store_rules import lookalike_sql, lookalike_sql_v1

if TYPE_CHECKING:
    import sqlite_utils
    from sqlite_migrate import Migrations
else:  # sqlite-migrate's class, from sqlite-utils loaded without numpy
    Migrations = load_sqlite_utils().Migrations

migrations = Migrations("kiln-registry")

_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+"
)
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "for",
        "from",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "that",
        "the",
        "this",
        "to",
        "use",
        "using",
        "want",
        "we",
        "with",
        "you",
        "your",
    ]
)
MAX_QUERY_TERMS = 24
# Names people search by that skill descriptions spell differently: office formats by product
# name, and a few abbreviations. Expansion only adds OR terms; the word itself is kept.
ALIASES = {
    "excel": "xlsx spreadsheet",
    "word": "docx",
    "powerpoint": "pptx presentation",
    "ppt": "pptx",
    "tdd": "test driven development",
    "js": "javascript",
    "ts": "typescript",
    "py": "python",
    "k8s": "kubernetes",
}


def cjk_bigrams(text: str) -> str:
    """Replace each CJK run with its overlapping bigrams (a lone character stays itself)."""

    def split(match: re.Match[str]) -> str:
        run = match.group(0)
        if len(run) == 1:
            return f" {run} "
        return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "

    return _CJK.sub(split, text)


def _once(text: str) -> str:
    """Each word of ``text`` once, in order, case-folded: bm25 counts a word's repeats, so a
    description of `pdf` 150 times (or a name `pdf-pdf-pdf`) outranked a skill about PDFs."""
    return " ".join(dict.fromkeys(word.lower() for word in re.findall(r"\w+", text)))


def search_text(name: str, description: str) -> tuple[str, str]:
    """The two indexed columns of a skill: its name's words (twice, as the name and its words
    were) and its description's, each word once (``_once``)."""
    words = _once(cjk_bigrams(name.replace("-", " ")))
    return f"{words} {words}", _once(cjk_bigrams(description))


def fts_query(query: str) -> str:
    """An FTS5 OR-query: stop words dropped (unless nothing else is left), aliases added,
    prefix matching for words of three letters or more."""
    words = re.findall(r"\w+", cjk_bigrams(query.lower()))
    kept = [w for w in words if w not in STOPWORDS] or words
    kept = [x for w in kept for x in [w, *ALIASES.get(w, "").split()]]
    seen: list[str] = []
    for word in kept:
        if word not in seen:
            seen.append(word)
    terms = [f'"{w}"*' if len(w) >= 3 or _CJK.match(w) else f'"{w}"' for w in seen]
    return " OR ".join(terms[:MAX_QUERY_TERMS])


@migrations()
def m001_initial(db: sqlite_utils.Database) -> None:
    db.table("skills").create(
        {
            "pk": int,
            "id": str,
            "namespace": str,
            "name": str,
            "description": str,
            "latest": str,
            "deprecated": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="pk",
        not_null={"id", "namespace", "name", "description", "created_at", "updated_at"},
        if_not_exists=True,
    )
    db.table("skills").create_index(["id"], unique=True, if_not_exists=True)
    db.table("skills").create_index(["updated_at"], index_name="skills_updated", if_not_exists=True)
    db.table("skills").create_index(
        ["namespace", "id"], index_name="skills_namespace", if_not_exists=True
    )
    db.table("versions").create(
        {
            "skill_id": str,
            "version": str,
            "status": str,
            "status_reason": str,
            "published_at": str,
            "doc": str,
        },
        pk=("skill_id", "version"),
        not_null={"skill_id", "version", "status", "status_reason", "published_at", "doc"},
        defaults={"status_reason": ""},
        if_not_exists=True,
    )
    db.table("dist_tags").create(
        {"skill_id": str, "tag": str, "version": str},
        pk=("skill_id", "tag"),
        not_null={"skill_id", "tag", "version"},
        if_not_exists=True,
    )
    db.table("tokens").create(
        {"token_sha256": str, "namespace": str, "created_at": str},
        pk="token_sha256",
        not_null={"namespace", "created_at"},
        if_not_exists=True,
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
        " skill_id TEXT NOT NULL, version TEXT, kind TEXT NOT NULL, at TEXT NOT NULL)"
    )


@migrations()
def m002_search_porter_cjk(db: sqlite_utils.Database) -> None:
    """Stemmed OR search: rebuild the FTS table with porter and CJK bigram text."""
    db.execute("DROP TABLE IF EXISTS skills_fts")
    db.execute(
        "CREATE VIRTUAL TABLE skills_fts USING fts5(name, description,"
        " tokenize='porter unicode61 remove_diacritics 2')"
    )
    for row in db.query("SELECT pk, name, description FROM skills"):
        name, description = search_text(row["name"], row["description"])
        db.execute(
            "INSERT INTO skills_fts (rowid, name, description) VALUES (?, ?, ?)",
            (row["pk"], name, description),
        )


@migrations()
def m003_token_lifecycle(db: sqlite_utils.Database) -> None:
    """Labelled, scoped, expiring, revocable tokens; tokens from before get every scope."""
    tokens = db.table("tokens")
    columns = {c.name for c in tokens.columns}
    for column in ("id", "label", "scopes", "expires_at", "revoked_at"):
        if column not in columns:
            tokens.add_column(column, str)
    db.execute(
        "UPDATE tokens SET id = 'tok_' || substr(token_sha256, 1, 12),"
        " label = coalesce(label, ''), scopes = coalesce(scopes, 'publish yank tag')"
        " WHERE id IS NULL"
    )
    tokens.create_index(["id"], unique=True, if_not_exists=True)
    tokens.create_index(["namespace"], if_not_exists=True)


@migrations()
def m004_audit_and_trusted_publishers(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
        " at TEXT NOT NULL, action TEXT NOT NULL, skill_id TEXT NOT NULL, version TEXT,"
        " sha256 TEXT, namespace TEXT NOT NULL, token_id TEXT NOT NULL, token_label TEXT NOT NULL)"
    )
    db.table("audit").create_index(["namespace", "seq"], if_not_exists=True)
    db.table("changes").create_index(["skill_id", "seq"], if_not_exists=True)
    db.table("trusted_publishers").create(
        {
            "id": str,
            "namespace": str,
            "issuer": str,
            "repository": str,
            "workflow": str,
            "environment": str,
            "created_at": str,
        },
        pk="id",
        not_null={"namespace", "issuer", "repository", "workflow", "environment", "created_at"},
        if_not_exists=True,
    )
    db.table("oidc_jti").create(
        {"issuer": str, "jti": str, "expires_at": str},
        pk=("issuer", "jti"),
        not_null={"expires_at"},
        if_not_exists=True,
    )


@migrations()
def m005_registry_meta(db: sqlite_utils.Database) -> None:
    """Facts about the registry itself (which signing key its documents are signed with)."""
    db.table("registry_meta").create(
        {"key": str, "value": str}, pk="key", not_null={"value"}, if_not_exists=True
    )


@migrations()
def m006_lookalike_indexes(db: sqlite_utils.Database) -> None:
    """Expression indexes for ``MetadataStore.lookalike`` (no column, nothing to backfill)."""
    for column in ("name", "id"):
        db.execute(
            f"CREATE INDEX IF NOT EXISTS skills_lookalike_{column} ON skills"
            f" ({lookalike_sql_v1(column)})"
        )


@migrations()
def m007_lookalike_skeleton(db: sqlite_utils.Database) -> None:
    """The look-alike indexes on the confusable skeleton (``rn``/``m``, separators…) instead of
    ``0``/``1`` alone; an expression, so nothing to backfill."""
    for column in ("name", "id"):
        db.execute(f"DROP INDEX IF EXISTS skills_lookalike_{column}")
        db.execute(f"CREATE INDEX skills_lookalike_{column} ON skills ({lookalike_sql(column)})")


@migrations()
def m008_trusted_publisher_ids(db: sqlite_utils.Database) -> None:
    """The repository's and owner's stable ids: a name can be deleted and taken again."""
    for column in ("repository_id", "owner_id"):
        db.execute(f"ALTER TABLE trusted_publishers ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")


@migrations()
def m009_version_archive_sha256(db: sqlite_utils.Database) -> None:
    """Each version's archive sha256 as a column, as PostgreSQL has it: read through
    ``json_extract``, every list of a skill's versions (its metadata, its detail) parsed every
    version's whole document, up to 8 MB each, and the sweep parsed them all for every blob.
    The column comes after the document in each row, where reading it walks the document's
    overflow pages, so a list reads a covering index instead."""
    db.execute("ALTER TABLE versions ADD COLUMN archive_sha256 TEXT NOT NULL DEFAULT ''")
    db.execute("UPDATE versions SET archive_sha256 = json_extract(doc, '$.archiveSha256')")
    db.execute("CREATE INDEX IF NOT EXISTS versions_archive ON versions (archive_sha256)")
    db.execute(
        "CREATE INDEX IF NOT EXISTS versions_list ON versions"
        " (skill_id, version, status, status_reason, published_at, archive_sha256)"
    )


@migrations()
def m010_version_archive_size(db: sqlite_utils.Database) -> None:
    """Each version's archive size as a column, for the namespace byte quota (``quotas``),
    summed in the publish transaction from an index rather than from every document."""
    db.execute("ALTER TABLE versions ADD COLUMN archive_size INTEGER NOT NULL DEFAULT 0")
    db.execute("UPDATE versions SET archive_size = coalesce(json_extract(doc, '$.archiveSize'), 0)")
    db.execute(
        "CREATE INDEX IF NOT EXISTS versions_quota ON versions"
        " (skill_id, published_at, archive_size)"
    )


@migrations()
def m011_search_words_once(db: sqlite_utils.Database) -> None:
    """Index every skill's search text again, each word once (``search_text``)."""
    db.execute("DELETE FROM skills_fts")
    for row in db.query("SELECT pk, name, description FROM skills"):
        db.execute(
            "INSERT INTO skills_fts (rowid, name, description) VALUES (?, ?, ?)",
            (row["pk"], *search_text(row["name"], row["description"])),
        )


def check_registry_file(path: Path) -> None:
    """Refuse a file that is another application's database before writing anything to it
    (even WAL mode rewrites its header): one whose tables carry none of the registry's
    migration records, or that is no SQLite database at all. A missing or empty file, or a
    database with no table yet (a first open killed before its migrations committed), is a
    new registry. The records are ``kiln-registry`` steps in ``_sqlite_migrations``, or the
    earlier migrator's ``m001_initial`` in ``_migrations`` beside a ``skills`` table."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
            if not tables or _has_registry_record(conn, tables):
                return
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise
        raise NotARegistry(f"{path} is not a Kiln registry database: {exc}") from None
    shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
    raise NotARegistry(
        f"{path} is not a Kiln registry database (it holds another application's tables: "
        f"{shown}); nothing was written to it"
    )


def _has_registry_record(conn: sqlite3.Connection, tables: list[str]) -> bool:
    if MIGRATIONS_TABLE in tables:
        sql = f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE migration_set = ? LIMIT 1"
        if conn.execute(sql, (migrations.name,)).fetchone():
            return True
    if "_migrations" in tables and "skills" in tables:
        sql = "SELECT 1 FROM _migrations WHERE name = 'm001_initial'"
        return conn.execute(sql).fetchone() is not None
    return False


def migrate(path: Path) -> None:
    """Apply pending migrations on a connection of their own, then close it: all of them in
    one IMMEDIATE transaction, so two processes opening a new registry at once do not both
    start a read and then fail to upgrade it (the second waits, then finds nothing to do).
    Another application's database is refused first (``check_registry_file``)."""
    check_registry_file(path)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        enable_wal(conn, 30)
        db = load_sqlite_utils().Database(conn)
        if not migrations.pending(db) and db[MIGRATIONS_TABLE].exists():
            return
        with immediate(conn):
            migrations.apply(db)  # each step in a savepoint, with its record
    finally:
        conn.close()
