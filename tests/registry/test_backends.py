"""What only shared backends must guarantee: many writers on one PostgreSQL, archives in S3.

Real PostgreSQL (a throwaway cluster) and a real S3 server (moto) driven through boto3; each
concurrency test uses several independent store objects, each with its own connection pool,
as several server processes would.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from skills_registry.archive import build_archive, read_dir
from skills_registry.registry.backends import open_blobs
from skills_registry.registry.errors import Conflict, ValidationFailed
from skills_registry.registry.pg_store import PostgresStore
from skills_registry.registry.publish import build_release
from skills_registry.registry.signing import load_or_create_key_file
from skills_registry.registry.sqlite_store import SQLiteStore
from skills_registry.registry.storage import BlobDir, BlobStore, MetadataStore
from tests.registry.conftest import make_skill
from tests.registry.servers import Postgres, S3Server


def _protocol_methods(proto: type) -> set[str]:
    return {n for n in vars(proto) if not n.startswith("_")}


def test_every_store_implements_the_whole_protocol() -> None:
    """A store operation added to the Protocol but not mirrored in a backend fails here."""
    from skills_registry.registry.s3_blobs import S3Blobs

    for impl in (SQLiteStore, PostgresStore):
        assert _protocol_methods(MetadataStore) - set(dir(impl)) == set(), impl
    for blob_impl in (BlobDir, S3Blobs):
        assert _protocol_methods(BlobStore) - set(dir(blob_impl)) == set(), blob_impl


def _doc(
    tmp_path: Path, signer: Any, skill_id: str, version: str, desc: str = "A skill."
) -> dict[str, Any]:
    name = skill_id.split("/")[1]
    folder = make_skill(tmp_path / f"src-{name}-{version}", name, description=desc)
    return build_release(skill_id, version, build_archive(read_dir(folder)), signer)


def test_racing_publishes_of_one_version_have_exactly_one_winner(
    postgres: Postgres, tmp_path: Path
) -> None:
    url = postgres.new_database()
    signer = load_or_create_key_file(tmp_path / "key")
    stores = [PostgresStore(url, max_size=2) for _ in range(4)]
    docs = [_doc(tmp_path, signer, "acme/race", "1.0.0", f"Variant {i}") for i in range(8)]
    barrier = threading.Barrier(8)

    def publish(i: int) -> str:
        barrier.wait()
        try:
            stores[i % 4].add_version(docs[i])
            return "won"
        except Conflict:
            return "conflict"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(publish, range(8)))
    assert sorted(outcomes) == ["conflict"] * 7 + ["won"]
    stored = stores[0].get_version("acme/race", "1.0.0")
    assert stored is not None and stored["description"] in {d["description"] for d in docs}
    assert [c["kind"] for c in stores[0].changes(0, 100)] == ["publish"]
    for store in stores:
        store.close()


def test_racing_publishes_equal_but_for_build_metadata_have_one_winner(
    metadata_store: Any, tmp_path: Path
) -> None:
    """`1.0.0+a` and `1.0.0+b` are one version: the publish route refuses the second before
    and after reading its body, but two racing publishes both passed those checks and both
    landed, one version with two archives a range could resolve to either. The store now
    checks inside the transaction that inserts (on PostgreSQL under the skill row's lock)."""
    signer = load_or_create_key_file(tmp_path / "key")
    metadata_store.add_version(_doc(tmp_path, signer, "acme/race", "0.9.0"))  # the skill exists
    docs = [_doc(tmp_path, signer, "acme/race", f"1.0.0+b{i}", f"Variant {i}") for i in range(6)]
    barrier = threading.Barrier(6)

    def publish(i: int) -> str:
        barrier.wait()
        try:
            metadata_store.add_version(docs[i])
            return "won"
        except Conflict:
            return "conflict"

    with ThreadPoolExecutor(6) as pool:
        outcomes = list(pool.map(publish, range(6)))
    assert sorted(outcomes) == ["conflict"] * 5 + ["won"]
    versions = [v["version"] for v in metadata_store.versions("acme/race")]
    assert len(versions) == 2 and versions[1] == "0.9.0" and versions[0].startswith("1.0.0+b")
    with pytest.raises(Conflict, match="same precedence"):
        metadata_store.add_version(_doc(tmp_path, signer, "acme/race", "1.0.0"))


LOOKALIKES = ["acme/deploy", "evil/dep1oy", "evil/dep-loy", "evil/c1eploy", "x/depioy", "y/de-ploy"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_racing_first_publishes_of_look_alike_names_have_one_winner(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Six names that read alike, published at once through separate store objects (separate
    server processes): every one passed the request's early check against an empty registry,
    so only the transaction that creates the skill can keep all but one out."""
    if backend == "postgresql":
        url = request.getfixturevalue("postgres").new_database()
        stores: list[Any] = [PostgresStore(url, max_size=2) for _ in range(3)]
    else:
        stores = [SQLiteStore(tmp_path / "registry.db") for _ in range(3)]
    signer = load_or_create_key_file(tmp_path / "key")
    docs = [_doc(tmp_path, signer, skill_id, "1.0.0") for skill_id in LOOKALIKES]
    assert all(stores[0].lookalike(skill_id) is None for skill_id in LOOKALIKES)
    barrier = threading.Barrier(len(docs))

    def publish(i: int) -> str:
        barrier.wait()
        try:
            stores[i % 3].add_version(docs[i])
            return "won"
        except ValidationFailed as exc:
            assert "reads like the existing skill" in str(exc)
            return "refused"

    with ThreadPoolExecutor(len(docs)) as pool:
        outcomes = list(pool.map(publish, range(len(docs))))
    assert sorted(outcomes) == ["refused"] * (len(docs) - 1) + ["won"]
    winner = LOOKALIKES[outcomes.index("won")]
    assert [s for s in LOOKALIKES if stores[0].get_skill(s) is not None] == [winner]
    assert [c["id"] for c in stores[0].changes(0, 100)] == [winner]
    for store in stores:
        getattr(store, "close", lambda: None)()


def test_change_feed_never_skips_an_entry_under_concurrent_writers(
    postgres: Postgres, tmp_path: Path
) -> None:
    """A follower that always asks for ``since=<last seq seen>`` sees every change exactly once."""
    url = postgres.new_database()
    signer = load_or_create_key_file(tmp_path / "key")
    writers = [PostgresStore(url, max_size=2) for _ in range(3)]
    reader = PostgresStore(url, max_size=1)
    docs = [_doc(tmp_path, signer, f"acme/s{i % 6}", f"1.0.{i}") for i in range(36)]
    done = threading.Event()
    seen: list[int] = []

    def follow() -> None:
        since = 0
        while True:
            finished = done.is_set()
            for change in reader.changes(since, 1000):
                seen.append(change["seq"])
                since = change["seq"]
            if finished:
                return

    follower = threading.Thread(target=follow)
    follower.start()
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda i: writers[i % 3].add_version(docs[i]), range(36)))
    done.set()
    follower.join(timeout=60)
    every = [c["seq"] for c in reader.changes(0, 1000)]
    assert len(every) == 36 and seen == every
    for store in [*writers, reader]:
        store.close()


def test_published_versions_are_immutable_in_the_database(
    postgres: Postgres, tmp_path: Path
) -> None:
    url = postgres.new_database()
    store = PostgresStore(url)
    store.add_version(_doc(tmp_path, load_or_create_key_file(tmp_path / "k"), "acme/a", "1.0.0"))
    with psycopg.connect(url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.RaiseException, match="immutable"):
            conn.execute("UPDATE versions SET doc = '{}'")
        with pytest.raises(psycopg.errors.RaiseException, match="immutable"):
            conn.execute("DELETE FROM versions")
        conn.execute("UPDATE versions SET status = 'yanked'")  # status is the mutable part
    store.close()


def test_migrations_run_once_when_instances_start_together(postgres: Postgres) -> None:
    url = postgres.new_database()
    barrier = threading.Barrier(5)

    def start(_: int) -> PostgresStore:
        barrier.wait()
        return PostgresStore(url, max_size=1)

    with ThreadPoolExecutor(5) as pool:
        stores = list(pool.map(start, range(5)))
    with psycopg.connect(url) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY name")]
    assert names == [
        "m001_initial",
        "m002_search_accounts",
        "m003_gin_without_pending_list",
        "m004_name_search_index",
        "m005_lookalike_indexes",
        "m006_lookalike_skeleton",
        "m007_trusted_publisher_ids",
        "m008_version_archive_size",
        "m009_search_words_once",
    ]
    for store in stores:
        store.close()


def test_search_is_stemmed_or_ranked_with_cjk(metadata_store: Any, tmp_path: Path) -> None:
    store, tmp = metadata_store, tmp_path
    signer = load_or_create_key_file(tmp / "k")
    for skill_id, desc in [
        ("acme/pdf", "Extract text and tables from PDF documents"),
        ("acme/xlsx", "Create spreadsheets with formulas"),
        ("acme/zh-notes", "整理会议记录并生成中文摘要"),
        ("acme/pdf-merge", "Merge several PDF files into one"),
    ]:
        store.add_version(_doc(tmp, signer, skill_id, "1.0.0", desc))
    ids = lambda q: [s["id"] for s in store.search(q)[0]]  # noqa: E731
    assert ids("document")[0] == "acme/pdf"  # stemmed
    assert set(ids("merge spreadsheets")) == {"acme/pdf-merge", "acme/xlsx"}  # OR
    assert ids("pdf")[0] in {"acme/pdf", "acme/pdf-merge"}  # the name counts most
    assert ids("中文摘要") == ["acme/zh-notes"]
    assert ids("会议") == ["acme/zh-notes"]


def test_name_matches_page_then_the_rest_in_score_order(postgres: Postgres, tmp_path: Path) -> None:
    """Pages the name-only index can fill, and pages that reach past the name matches, walk one
    order: score (name 4, description 1 per word), then insertion."""
    store, signer = PostgresStore(postgres.new_database()), load_or_create_key_file(tmp_path / "k")
    for skill_id, desc in [
        ("acme/beta", "An alpha helper in the description only"),
        ("acme/alpha-one", "Nothing else"),
        ("acme/alpha-tool", "Alpha release notes"),
        ("acme/alpha-two", "Other things"),
        ("acme/gamma", "Alphanumeric checks"),
        ("acme/delta", "Unrelated"),
    ]:
        store.add_version(_doc(tmp_path, signer, skill_id, "1.0.0", desc))
    pages, cursor = [], None
    while True:
        page, cursor = store.search("alpha", limit=2, cursor=cursor)
        pages.append([s["id"] for s in page])
        if cursor is None:
            break
    assert pages == [
        ["acme/alpha-tool", "acme/alpha-one"],  # read from the name-only index
        ["acme/alpha-two", "acme/beta"],  # past the name matches: every word match scored
        ["acme/gamma"],
    ]
    store.close()


def test_search_cache_sees_writes_from_other_instances(postgres: Postgres, tmp_path: Path) -> None:
    url = postgres.new_database()
    signer = load_or_create_key_file(tmp_path / "k")
    here, there = PostgresStore(url), PostgresStore(url)
    here.add_version(_doc(tmp_path, signer, "acme/xlsx", "1.0.0", "Spreadsheets"))
    assert here.search("pdf")[0] == [] and here.search("pdf")[0] == []  # cached
    there.add_version(_doc(tmp_path, signer, "acme/pdf", "1.0.0", "Read PDF files"))
    assert [s["id"] for s in here.search("pdf")[0]] == ["acme/pdf"]
    there.set_deprecation("acme/pdf", "use acme/pdf2")
    assert here.search("pdf")[0][0]["deprecated"] == "use acme/pdf2"
    here.close()
    there.close()


def test_a_tampered_object_in_the_bucket_is_refused(s3: S3Server) -> None:
    """Whoever can write to the bucket cannot make the registry hand out other bytes."""
    import boto3

    from skills_registry.registry.errors import IntegrityError
    from skills_registry.registry.s3_blobs import S3Blobs

    bucket = s3.new_bucket()
    blobs = open_blobs(f"s3://{bucket}/p")
    sha = blobs.put(b"the real archive")
    assert isinstance(blobs, S3Blobs)
    assert blobs.size(sha) == len(b"the real archive")
    raw = boto3.client("s3", endpoint_url=s3.endpoint)
    raw.put_object(Bucket=bucket, Key=f"p/{sha[:2]}/{sha}", Body=b"swapped by an attacker")
    with pytest.raises(IntegrityError, match="other bytes"):
        open_blobs(f"s3://{bucket}/p").get(sha)  # a fresh store: nothing cached


def test_word_matches_then_substring_matches_page_consistently(
    metadata_store: Any, tmp_path: Path
) -> None:
    """Pages of a query walk every match once: word matches first, then substring-only ones."""
    store, signer = metadata_store, load_or_create_key_file(tmp_path / "k")
    for i in range(5):
        store.add_version(_doc(tmp_path, signer, f"acme/sheet-{i}", "1.0.0", "Sheet tools"))
    for i in range(5):
        store.add_version(_doc(tmp_path, signer, f"acme/calc-{i}", "1.0.0", "Spreadsheet math"))
    seen: list[str] = []
    cursor = None
    while True:
        page, cursor = store.search("sheet", limit=3, cursor=cursor)
        seen += [s["id"] for s in page]
        if cursor is None:
            break
    assert len(seen) == len(set(seen))
    assert {s for s in seen[:5]} == {f"acme/sheet-{i}" for i in range(5)}
    # PostgreSQL's trigram path also finds "sheet" inside a word; SQLite's FTS does not
    inside = {f"acme/calc-{i}" for i in range(5)} if isinstance(store, PostgresStore) else set()
    assert set(seen[5:]) == inside
