"""The registry's SQLite schema: named migrations, upgrade in place, token records, audit log."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from skills_registry.registry.errors import NotFound, UsageError
from skills_registry.registry.sqlite_store import VERSION_LIST_SQL, SQLiteStore
from skills_registry.registry.storage import token_id, token_live
from skills_registry.registry.store_rules import LOOKALIKE_SQL

# The schema the earlier hand-written migrator created, recorded in `_migrations`.
_OLD_SCHEMA = """
CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO _migrations VALUES ('m001_initial', '2026-01-01T00:00:00Z');
CREATE TABLE skills (pk INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, namespace TEXT NOT NULL,
    name TEXT NOT NULL, description TEXT NOT NULL, latest TEXT, deprecated TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE VIRTUAL TABLE skills_fts USING fts5(name, description, tokenize='unicode61');
CREATE TABLE versions (skill_id TEXT NOT NULL, version TEXT NOT NULL, status TEXT NOT NULL,
    status_reason TEXT NOT NULL DEFAULT '', published_at TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (skill_id, version));
CREATE TABLE dist_tags (skill_id TEXT NOT NULL, tag TEXT NOT NULL, version TEXT NOT NULL,
    PRIMARY KEY (skill_id, tag));
CREATE TABLE tokens (token_sha256 TEXT PRIMARY KEY, namespace TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, skill_id TEXT NOT NULL,
    version TEXT, kind TEXT NOT NULL, at TEXT NOT NULL);
INSERT INTO skills VALUES (1, 'acme/pdf', 'acme', 'pdf', 'Extract text from PDF documents',
    '1.0.0', NULL, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');
INSERT INTO skills_fts (rowid, name, description) VALUES (1, 'pdf pdf', 'Extract text from PDF documents');
INSERT INTO tokens VALUES ('{sha}', 'acme', '2026-01-01T00:00:00Z');
"""


def test_database_from_the_old_migrator_upgrades_in_place(tmp_path: Path) -> None:
    import hashlib

    secret = "kiln_old-token"
    path = tmp_path / "registry.db"
    db = sqlite3.connect(path)
    db.executescript(_OLD_SCHEMA.replace("{sha}", hashlib.sha256(secret.encode()).hexdigest()))
    db.close()

    store = SQLiteStore(path)
    applied = [r[0] for r in sqlite3.connect(path).execute("SELECT name FROM _sqlite_migrations")]
    assert applied[0] == "m001_initial" and "m003_token_lifecycle" in applied
    # the old token keeps working, now with an id, every scope and no expiry
    record = store.get_token(secret)
    assert record is not None and record["id"] == token_id(secret)
    assert record["scopes"] == ["publish", "yank", "tag"] and token_live(record)
    # the search index was rebuilt with the stemmer: "document" finds "documents"
    assert [s["id"] for s in store.search("document")[0]] == ["acme/pdf"]
    SQLiteStore(path)  # a second open applies nothing and fails nothing
    # the look-alike check reads the upgraded skeleton index: "pdf" reads like "pclf"
    assert store.lookalike("evil/pclf") == "acme/pdf"
    plan = " ".join(
        str(row[-1])
        for row in sqlite3.connect(path).execute(
            "EXPLAIN QUERY PLAN " + LOOKALIKE_SQL.format(p="?"), ("x", "x", "x/x", "x/x")
        )
    )
    assert "skills_lookalike_name" in plan and "skills_lookalike_id" in plan, plan


def test_token_lifecycle(metadata_store: Any) -> None:
    store = metadata_store
    ci = store.create_token("acme", label="ci release", scopes=["publish"])
    old = store.create_token("acme", label="old", expires_at="2000-01-01T00:00:00Z")
    assert store.token_namespace(ci) == "acme"
    assert store.token_namespace(old) is None  # expired
    listed = {t["label"]: t for t in store.list_tokens("acme")}
    assert listed["ci release"]["scopes"] == ["publish"]
    assert listed["old"]["expiresAt"] == "2000-01-01T00:00:00.000000Z"
    assert all("token" not in k.lower() or k == "tokenId" for t in listed.values() for k in t)
    revoked = store.revoke_token(token_id(ci))
    assert revoked["revokedAt"] and store.token_namespace(ci) is None
    with pytest.raises(NotFound):
        store.revoke_token(token_id(ci), namespace="other")
    with pytest.raises(UsageError, match="scopes"):
        store.create_token("acme", scopes=["admin"])


def test_audit_log_and_jti_replay(metadata_store: Any) -> None:
    store = metadata_store
    token = {"id": "tok_x", "label": "laptop"}
    store.record_audit(
        action="publish", skill_id="acme/a", version="1.0.0", sha256="ab", token=token
    )
    store.record_audit(action="yank", skill_id="other/b", version="1.0.0", sha256=None, token=token)
    rows = store.audit_log("acme")
    assert [(r["action"], r["id"], r["tokenLabel"], r["sha256"]) for r in rows] == [
        ("publish", "acme/a", "laptop", "ab")
    ]
    assert store.claim_jti("https://issuer", "j1", "2999-01-01T00:00:00Z")
    assert not store.claim_jti("https://issuer", "j1", "2999-01-01T00:00:00Z")


def test_every_store_refuses_bad_token_fields_and_dist_tags(metadata_store: Any) -> None:
    store = metadata_store
    with pytest.raises(UsageError, match="namespace"):
        store.create_token("Not A Namespace")
    with pytest.raises(UsageError, match="label"):
        store.create_token("acme", label="line\nbreak")
    with pytest.raises(UsageError, match="dist-tag"):
        store.set_dist_tag("acme/tool", "Next!", "1.0.0")
    assert store.list_tokens("acme") == []


@pytest.mark.parametrize(
    ("issuer", "ids", "words"),
    [
        ("http://issuer.example", ("", ""), "http only on loopback"),  # PostgreSQL took it
        ("https://issuer.example", ("12a", ""), "--repository-id"),
        ("https://issuer.example", ("", "-1"), "--owner-id"),
        ("https://issuer.example", ("\u00b2", ""), "--repository-id"),  # isdigit() took it
    ],
)
def test_every_store_refuses_the_same_trusted_publishers(
    metadata_store: Any, issuer: str, ids: tuple[str, str], words: str
) -> None:
    """docs/registry.md: `http://` issuers only on loopback, on every store; ids are numbers."""
    with pytest.raises(UsageError, match=words):
        metadata_store.add_trusted_publisher(
            "acme", issuer, "acme/skills", ".github/workflows/release.yml", "", *ids
        )
    assert metadata_store.trusted_publishers() == []


@pytest.mark.parametrize(
    ("repository", "workflow", "environment", "words"),
    [
        ("../b", ".github/workflows/release.yml", "", "OWNER/NAME"),
        ("acme/..", ".github/workflows/release.yml", "", "OWNER/NAME"),
        ("caf\u00e9/skills", ".github/workflows/release.yml", "", "OWNER/NAME"),
        ("acme/skills", "../../release.yml", "", "workflow"),
        ("acme/skills", "/.github/workflows/release.yml", "", "workflow"),
        ("acme/skills", ".github/workflows/release.yml\n", "", "workflow"),
        ("acme/skills", ".github/workflows/release.yml", "prod\n", "environment"),
    ],
)
def test_every_store_refuses_a_publisher_no_id_token_can_name(
    metadata_store: Any, repository: str, workflow: str, environment: str, words: str
) -> None:
    """`../b` passed as OWNER/NAME (`[\\w.-]+` takes `..` and `é`), a workflow could hold a
    newline or `..`: rows no ID token matches, listed as if they were publishers."""
    with pytest.raises(UsageError, match=words):
        metadata_store.add_trusted_publisher(
            "acme", "https://issuer.example", repository, workflow, environment
        )
    assert metadata_store.trusted_publishers() == []


def test_every_store_refuses_the_same_publisher_twice(metadata_store: Any) -> None:
    """A second `trusted-publisher add` of the same workflow made a second row (two ids, one of
    them never pinned); it names the first one instead. Another environment is another one."""
    first = metadata_store.add_trusted_publisher(
        "acme", "https://issuer.example/", "Acme/Skills", ".github/workflows/release.yml"
    )
    with pytest.raises(UsageError, match=f"{first['id']} already lets"):
        metadata_store.add_trusted_publisher(
            "acme", "https://issuer.example", "acme/skills", ".github/workflows/release.yml"
        )
    metadata_store.add_trusted_publisher(
        "acme", "https://issuer.example", "acme/skills", ".github/workflows/release.yml", "prod"
    )
    assert len(metadata_store.trusted_publishers("acme")) == 2


def test_version_lists_read_no_version_document(tmp_path: Path) -> None:
    """A skill's version list (its signed metadata and detail) and the sweep's reference check
    read each version's archive sha256 from its own column, not out of the document: before,
    `json_extract` parsed every version's whole document (up to 8 MB) on each anonymous read,
    40 versions of 4 MB took 0.3 s of the server's one event loop. Checked by writing
    documents SQLite's JSON functions cannot parse after a database of the old schema (which
    held a version) is upgraded: the lists still answer, from the column the upgrade filled."""
    path = tmp_path / "registry.db"
    db = sqlite3.connect(path)
    db.executescript(_OLD_SCHEMA.replace("{sha}", "0" * 64))
    sha = "ab" * 32
    db.execute(
        "INSERT INTO versions VALUES ('acme/pdf', '1.0.0', 'active', '', '2026-01-01T00:00:00Z', ?)",
        (f'{{"archiveSha256": "{sha}", "id": "acme/pdf", "version": "1.0.0"}}',),
    )
    db.commit()
    db.close()
    store = SQLiteStore(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE versions SET doc = 'not JSON: parsing it fails'")
    db.commit()
    db.close()
    assert [(v["version"], v["archiveSha256"]) for v in store.versions("acme/pdf")] == [
        ("1.0.0", sha)
    ]
    assert store.archive_referenced(sha) and not store.archive_referenced("cd" * 32)
    # the column comes after the document in each row (reading it would walk the document's
    # overflow pages), so the list reads an index that holds every column it needs
    plan = sqlite3.connect(path).execute("EXPLAIN QUERY PLAN " + VERSION_LIST_SQL, ("x",))
    assert "COVERING INDEX versions_list" in str(plan.fetchall())
