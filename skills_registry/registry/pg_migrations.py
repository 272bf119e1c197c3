"""The PostgreSQL schema as named migrations, applied once each under an advisory lock.

Several instances may start at the same moment against one database: each takes the same
session-level advisory lock before reading ``_migrations``, so exactly one applies a step and the
others find it recorded. Each step runs in its own transaction with its record.

Immutability is the database's job, not only the app's: a version row is keyed by
``(skill_id, version)`` and a trigger refuses any change to its document or any delete, so a bug
or a second writer cannot rewrite a release that clients already pinned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skills_registry.registry.store_rules import lookalike_sql, lookalike_sql_v1

MIGRATION_LOCK = 0x6B696C6E  # "kiln": the advisory-lock key every instance agrees on

M001 = """
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE TABLE skills (
    pk BIGSERIAL PRIMARY KEY, id TEXT UNIQUE NOT NULL, namespace TEXT NOT NULL,
    name TEXT NOT NULL, description TEXT NOT NULL, latest TEXT, deprecated TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', replace(name, '-', ' ') || ' ' || name), 'A')
        || setweight(to_tsvector('simple', description), 'B')) STORED,
    search_text TEXT GENERATED ALWAYS AS (lower(name || ' ' || description)) STORED);
CREATE INDEX skills_updated ON skills(updated_at);
CREATE INDEX skills_namespace ON skills(namespace, id);
CREATE INDEX skills_search ON skills USING GIN (search);
CREATE INDEX skills_trgm ON skills USING GIN (search_text gin_trgm_ops);
CREATE TABLE versions (
    skill_id TEXT NOT NULL REFERENCES skills(id), version TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'deprecated', 'yanked')),
    status_reason TEXT NOT NULL DEFAULT '', published_at TEXT NOT NULL, doc TEXT NOT NULL,
    archive_sha256 TEXT NOT NULL CHECK (archive_sha256 ~ '^[0-9a-f]{64}$'),
    PRIMARY KEY (skill_id, version));
CREATE INDEX versions_archive ON versions(archive_sha256);
CREATE FUNCTION versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'published versions are immutable (delete of %@%)',
            OLD.skill_id, OLD.version;
    END IF;
    IF NEW.doc IS DISTINCT FROM OLD.doc OR NEW.version IS DISTINCT FROM OLD.version
       OR NEW.skill_id IS DISTINCT FROM OLD.skill_id
       OR NEW.archive_sha256 IS DISTINCT FROM OLD.archive_sha256
       OR NEW.published_at IS DISTINCT FROM OLD.published_at THEN
        RAISE EXCEPTION 'published versions are immutable (%@%)', OLD.skill_id, OLD.version;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER versions_immutable BEFORE UPDATE OR DELETE ON versions
    FOR EACH ROW EXECUTE FUNCTION versions_immutable();
CREATE TABLE dist_tags (skill_id TEXT NOT NULL REFERENCES skills(id), tag TEXT NOT NULL,
    version TEXT NOT NULL, PRIMARY KEY (skill_id, tag),
    FOREIGN KEY (skill_id, version) REFERENCES versions(skill_id, version));
CREATE TABLE tokens (token_sha256 TEXT PRIMARY KEY, namespace TEXT NOT NULL,
    created_at TEXT NOT NULL);
CREATE TABLE changes (seq BIGSERIAL PRIMARY KEY, skill_id TEXT NOT NULL, version TEXT,
    kind TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE registry_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def m002_search_accounts(conn: Any) -> None:
    """Stemmed OR search with CJK bigrams (as the SQLite store), and the token lifecycle,
    audit log, trusted publishers and OIDC replay tables."""
    from skills_registry.registry.sqlite_schema import search_text

    conn.execute(
        "ALTER TABLE skills DROP COLUMN search,"
        " ADD COLUMN search_name TEXT NOT NULL DEFAULT '',"
        " ADD COLUMN search_desc TEXT NOT NULL DEFAULT ''"
    )
    for pk, name, description in conn.execute(
        "SELECT pk, name, description FROM skills"
    ).fetchall():
        conn.execute(
            "UPDATE skills SET search_name=%s, search_desc=%s WHERE pk=%s",
            (*search_text(name, description), pk),
        )
    conn.execute(
        "ALTER TABLE skills ADD COLUMN search tsvector GENERATED ALWAYS AS ("
        " setweight(to_tsvector('english', search_name), 'A')"
        " || setweight(to_tsvector('english', search_desc), 'B')) STORED"
    )
    conn.execute("CREATE INDEX skills_search ON skills USING GIN (search)")
    conn.execute(
        """
        ALTER TABLE tokens ADD COLUMN id TEXT, ADD COLUMN label TEXT NOT NULL DEFAULT '',
            ADD COLUMN scopes TEXT NOT NULL DEFAULT 'publish yank tag',
            ADD COLUMN expires_at TEXT, ADD COLUMN revoked_at TEXT;
        UPDATE tokens SET id = 'tok_' || substr(token_sha256, 1, 12) WHERE id IS NULL;
        ALTER TABLE tokens ALTER COLUMN id SET NOT NULL;
        CREATE UNIQUE INDEX tokens_id ON tokens(id);
        CREATE INDEX tokens_namespace ON tokens(namespace);
        CREATE TABLE audit (seq BIGSERIAL PRIMARY KEY, at TEXT NOT NULL, action TEXT NOT NULL,
            skill_id TEXT NOT NULL, version TEXT, sha256 TEXT, namespace TEXT NOT NULL,
            token_id TEXT NOT NULL, token_label TEXT NOT NULL);
        CREATE INDEX audit_namespace ON audit(namespace, seq);
        CREATE INDEX changes_skill ON changes(skill_id, seq);
        CREATE TABLE trusted_publishers (id TEXT PRIMARY KEY, namespace TEXT NOT NULL,
            issuer TEXT NOT NULL, repository TEXT NOT NULL, workflow TEXT NOT NULL,
            environment TEXT NOT NULL, created_at TEXT NOT NULL);
        CREATE TABLE oidc_jti (issuer TEXT NOT NULL, jti TEXT NOT NULL, expires_at TEXT NOT NULL,
            PRIMARY KEY (issuer, jti));
        """
    )


# GIN's pending list makes new entries cheap to insert and slow to search until a vacuum
# merges them; a registry is read far more than written, so entries go straight in.
M003 = """
ALTER INDEX skills_search SET (fastupdate = off);
ALTER INDEX skills_trgm SET (fastupdate = off);
SELECT gin_clean_pending_list('skills_search'::regclass);
SELECT gin_clean_pending_list('skills_trgm'::regclass);
"""

# The name's words alone, with their own GIN index: a search whose page holds only name matches
# (see ``PostgresSearch._text_search`` in pg_search) reads those rows instead of every word match.
M004 = """
ALTER TABLE skills ADD COLUMN search_names tsvector
    GENERATED ALWAYS AS (to_tsvector('english', search_name)) STORED;
CREATE INDEX skills_search_names ON skills USING GIN (search_names) WITH (fastupdate = off);
ANALYZE skills;
"""

# For ``MetadataStore.lookalike``: the first publish of a skill asks whether its name reads like
# another's; expression indexes keep that an index lookup among 100,000 skills.
M005 = f"""
CREATE INDEX skills_lookalike_name ON skills ({lookalike_sql_v1("name")});
CREATE INDEX skills_lookalike_id ON skills ({lookalike_sql_v1("id")});
"""

# The same indexes on the confusable skeleton (``rn``/``m``, separators…; ``storage``).
M006 = f"""
DROP INDEX IF EXISTS skills_lookalike_name;
DROP INDEX IF EXISTS skills_lookalike_id;
CREATE INDEX skills_lookalike_name ON skills ({lookalike_sql("name")});
CREATE INDEX skills_lookalike_id ON skills ({lookalike_sql("id")});
"""

# The repository's and owner's stable ids: a name can be deleted and taken again.
M007 = """
ALTER TABLE trusted_publishers ADD COLUMN repository_id TEXT NOT NULL DEFAULT '';
ALTER TABLE trusted_publishers ADD COLUMN owner_id TEXT NOT NULL DEFAULT '';
"""

# Each version's archive size as a column, for the namespace byte quota (``quotas``), and
# immutable like the rest of the row.
M008 = """
ALTER TABLE versions ADD COLUMN archive_size BIGINT NOT NULL DEFAULT 0;
UPDATE versions SET archive_size = coalesce((doc::json->>'archiveSize')::bigint, 0);
CREATE INDEX versions_quota ON versions(skill_id, published_at) INCLUDE (archive_size);
CREATE OR REPLACE FUNCTION versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'published versions are immutable (delete of %@%)',
            OLD.skill_id, OLD.version;
    END IF;
    IF NEW.doc IS DISTINCT FROM OLD.doc OR NEW.version IS DISTINCT FROM OLD.version
       OR NEW.skill_id IS DISTINCT FROM OLD.skill_id
       OR NEW.archive_sha256 IS DISTINCT FROM OLD.archive_sha256
       OR NEW.archive_size IS DISTINCT FROM OLD.archive_size
       OR NEW.published_at IS DISTINCT FROM OLD.published_at THEN
        RAISE EXCEPTION 'published versions are immutable (%@%)', OLD.skill_id, OLD.version;
    END IF;
    RETURN NEW;
END $$;
"""


def m009_search_words_once(conn: Any) -> None:
    """Every skill's search text again, each word once (``sqlite_schema.search_text``)."""
    from skills_registry.registry.sqlite_schema import search_text

    rows = conn.execute("SELECT pk, name, description FROM skills").fetchall()
    for pk, name, description in rows:
        conn.execute(
            "UPDATE skills SET search_name=%s, search_desc=%s WHERE pk=%s",
            (*search_text(name, description), pk),
        )


MIGRATIONS: list[tuple[str, str | Callable[[Any], None]]] = [
    ("m001_initial", M001),
    ("m002_search_accounts", m002_search_accounts),
    ("m003_gin_without_pending_list", M003),
    ("m004_name_search_index", M004),
    ("m005_lookalike_indexes", M005),
    ("m006_lookalike_skeleton", M006),
    ("m007_trusted_publisher_ids", M007),
    ("m008_version_archive_size", M008),
    ("m009_search_words_once", m009_search_words_once),
]


def migrate(conn: Any) -> list[str]:
    """Apply missing migrations (``conn`` in autocommit mode); returns the names applied here."""
    applied: list[str] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
        for name, step in MIGRATIONS:
            if name in done:
                continue
            with conn.transaction():
                if callable(step):
                    step(conn)
                else:
                    conn.execute(step)
                conn.execute(
                    "INSERT INTO _migrations VALUES (%s, to_char(now() AT TIME ZONE 'UTC',"
                    ' \'YYYY-MM-DD"T"HH24:MI:SS.US"Z"\'))',
                    (name,),
                )
            applied.append(name)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return applied
