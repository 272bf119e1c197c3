"""Copy a whole registry between backends (SQLite + folder <-> PostgreSQL + S3), verified.

Every archive is read back from the source, hashed and checked against its version document,
and every document's signature is checked against the source's key before anything is written;
the archive is stored before its version row, as a publish does. A version already present at
the target is compared, not rewritten, so running the copy again (after an interruption, or to
catch up) only adds what is missing: idempotent and resumable. Statuses, deprecations and
dist-tags (``latest`` included) are then set to the source's values, and the target numbers
its change feed above the source's, so the clients it inherits accept its signed metadata.
Tokens are not copied: they are secrets hashed at rest, and a copy is a good moment to issue new
ones. Skills whose ids break the id rules (written before the rules held) are not copied:
no registry serves them, and the report names them. The whole copy is measured against the target's size quotas before anything is written
(``check_quotas``, which the CLI runs before it even binds the target to the key): a copy that would leave a namespace or a skill past one is
refused whole, never stopped half-way. The publish rate does not apply: a copy publishes
nothing new, and its versions keep their original ``published_at``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from skills_registry.registry.errors import Conflict, IntegrityError, QuotaExceeded
from skills_registry.registry.id_rules import dist_tag_refusal, escaped, id_refusal
from skills_registry.registry.quotas import Quotas
from skills_registry.registry.signing import Signer, document_message, verify_bytes, verify_release
from skills_registry.registry.storage import BlobStore, MetadataStore


@dataclass
class MigrateReport:
    copied: int = 0
    present: int = 0
    skills: int = 0
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # pre-rule ids, escaped: not copied
    skipped_tags: list[str] = field(default_factory=list)  # pre-rule dist-tags, the same


def _all_skills(store: MetadataStore, skipped: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Every skill the source serves. An id written before the id rules held (``evil\\n/x``)
    is served by no registry, so it is not copied (its id, escaped, goes to ``skipped``)."""
    cursor: str | None = None
    while True:
        page, cursor = store.search("", cursor=cursor, limit=100)
        for skill in page:
            if id_refusal(str(skill["id"])) is None:
                yield skill
            elif skipped is not None:
                skipped.append(escaped(str(skill["id"])))
        if cursor is None:
            return


def _check(doc: dict[str, Any], data: bytes, signer: Signer) -> None:
    label = f"{doc['id']}@{doc['version']}"
    if hashlib.sha256(data).hexdigest() != doc["archiveSha256"]:
        raise IntegrityError(f"{label}: archive does not match its sha256 at the source")
    sig = doc["signatures"][0]
    if not verify_release(
        signer.public_key_b64, doc["id"], doc["version"], doc["archiveSha256"], sig["signature"]
    ):
        raise IntegrityError(f"{label}: signature does not verify with the source's key")
    if "document" in sig and not verify_bytes(
        signer.public_key_b64, document_message(doc), sig["document"]
    ):
        raise IntegrityError(f"{label}: document signature does not verify with the source's key")


def _stored(doc: dict[str, Any]) -> dict[str, Any]:
    """The immutable document, without the mutable status fields the store adds on read."""
    return {k: v for k, v in doc.items() if k not in ("status", "statusReason")}


_RAISE = "pass the limits the target is served with, raised, or copy less; nothing was copied"


def check_quotas(source: MetadataStore, target: MetadataStore, quotas: Quotas) -> None:
    """Refuse, before any write, a copy that would take a namespace past ``namespaceBytes`` or
    a skill past ``versionsPerSkill`` at the target: what the target holds already plus every
    version it lacks, counted as the target's stores count them (``archiveSize``)."""
    added_bytes: dict[str, int] = {}
    for skill in _all_skills(source):
        skill_id = skill["id"]
        namespace = skill_id.partition("/")[0]
        added = [
            doc
            for entry in source.versions(skill_id)
            if target.get_version(skill_id, entry["version"]) is None
            and (doc := source.get_version(skill_id, entry["version"])) is not None
        ]
        if not added:
            continue
        usage = target.quota_usage(skill_id)
        versions = usage.skill_versions + len(added)
        if versions > quotas.versions_per_skill:
            raise QuotaExceeded(
                f"copying {len(added)} versions of {skill_id} would give it {versions} at the "
                f"target; the quota (versionsPerSkill) is {quotas.versions_per_skill}",
                quota="versionsPerSkill",
                usage=usage.skill_versions,
                limit=quotas.versions_per_skill,
                status=409,
                hint=_RAISE,
            )
        if namespace not in added_bytes:
            added_bytes[namespace] = usage.namespace_bytes  # the target's own, counted once
        added_bytes[namespace] += sum(int(doc.get("archiveSize") or 0) for doc in added)
    for namespace, total in added_bytes.items():
        if total > quotas.namespace_bytes:
            raise QuotaExceeded(
                f"copying would give namespace {namespace!r} {total} archive bytes at the "
                f"target; the quota (namespaceBytes) is {quotas.namespace_bytes}",
                quota="namespaceBytes",
                usage=total,
                limit=quotas.namespace_bytes,
                hint=_RAISE,
            )


def migrate_registry(
    source: MetadataStore,
    source_blobs: BlobStore,
    target: MetadataStore,
    target_blobs: BlobStore,
    signer: Signer,
    progress: Callable[[str], None] = lambda _line: None,
) -> MigrateReport:
    """Copy every version (oldest first per skill), then statuses, deprecations and tags
    (``check_quotas`` first, when the target has quotas)."""
    report = MigrateReport()
    # The target is served with the source's key, and clients refuse a skill's metadata whose
    # seq is below what they accepted from that key: number every copied change above the
    # source's.
    target.advance_seq(source.last_seq())
    for skill in _all_skills(source, report.skipped):
        report.skills += 1
        skill_id = skill["id"]
        versions = list(reversed(source.versions(skill_id)))  # oldest first, as published
        versions.sort(key=lambda v: v["publishedAt"])
        for entry in versions:
            doc = source.get_version(skill_id, entry["version"])
            assert doc is not None
            immutable = _stored(doc)
            existing = target.get_version(skill_id, entry["version"])
            if existing is not None:
                if _stored(existing) != immutable:
                    raise Conflict(
                        f"{skill_id}@{entry['version']} differs at the target",
                        hint="the target already holds another release under this version",
                    )
                report.present += 1
            else:
                data = source_blobs.get(doc["archiveSha256"])
                _check(doc, data, signer)
                target_blobs.put(data)
                target.add_version(immutable)
                report.copied += 1
                progress(f"copied {skill_id}@{entry['version']}")
            if doc.get("status", "active") != "active":
                current = target.get_version(skill_id, entry["version"]) or {}
                if (current.get("status"), current.get("statusReason")) != (
                    doc["status"],
                    doc.get("statusReason", ""),
                ):
                    target.set_status(
                        skill_id, entry["version"], doc["status"], doc.get("statusReason", "")
                    )
        _copy_skill_state(source, target, skill_id, report.skipped_tags)
    return report


def _copy_skill_state(
    source: MetadataStore, target: MetadataStore, skill_id: str, skipped: list[str]
) -> None:
    """Deprecation and dist-tags as at the source; a tag stored before the dist-tag rule held
    is not copied (the target's store refuses it), but named in ``skipped``."""
    want = source.get_skill(skill_id) or {}
    have = target.get_skill(skill_id) or {}
    if want.get("deprecated") != have.get("deprecated"):
        target.set_deprecation(skill_id, want.get("deprecated"))
    tags, current = want.get("distTags", {}), have.get("distTags", {})
    for tag, version in tags.items():  # `latest` too: a publisher may have moved it back
        if dist_tag_refusal(tag) is not None:
            skipped.append(f"{skill_id}@{escaped(tag)}")
        elif current.get(tag) != version:
            target.set_dist_tag(skill_id, tag, version)
    for tag in current:
        if tag not in tags:
            target.set_dist_tag(skill_id, tag, None)
