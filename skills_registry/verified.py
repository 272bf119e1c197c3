"""Resolution against signed registry metadata, and review facts recomputed from the archive.

A client acts on three things a registry says: which versions exist and their status (yanked,
deprecated, dist-tags), what a version contains, and the archive bytes. Here each is checked
against the pinned key before use:

- the skill metadata envelope must verify, name the skill asked for, not be expired (a mirror
  cannot freeze a client on old metadata) and not go back in ``seq`` from the last one this
  client accepted (a mirror cannot replay an older signed copy to roll it back);
- the version document must carry a valid document signature and the archive sha256 the
  metadata lists for that version;
- the review facts (file list, scripts, scan, frontmatter) are recomputed from the verified
  archive, never copied from a document, so a stripped or stale field cannot hide a script.

Offline (no answer at all from the registry), the last accepted metadata stands in, expiry
not checked: it came from this client's own cache, and refusing it would only break offline
installs, not stop an attacker. A registry that answers but fails the metadata gets no such
fallback: that would let a mirror freeze the client on its cached copy for ever.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from skills_registry.archive import ArchiveContents, sha256_hex
from skills_registry.client import Cache, RegistryClient
from skills_registry.errors import SkillInvalid
from skills_registry.registry.errors import (
    IntegrityError,
    NotFound,
    RegistryUnavailable,
)
from skills_registry.registry.scan import is_script, scan_files
from skills_registry.registry.semver import Version
from skills_registry.registry.signing import document_message, metadata_message, verify_bytes
from skills_registry.spec import parse_frontmatter, version_mismatch
from skills_registry.version_choice import choose, exact_version, stranded

METADATA_TYPE = "kiln-skill-metadata"


class StaleMetadata(IntegrityError):
    hint = "the registry or mirror serves expired metadata; try again later or another mirror"


class RolledBack(IntegrityError):
    hint = "a mirror or proxy is replaying older signed metadata; use the registry directly"


class Downgrade(IntegrityError):
    """Resolution picked a version below the locked one that nobody asked for."""


@dataclass
class Resolved:
    doc: dict[str, Any]
    status: str
    status_reason: str
    deprecated: str | None
    versions: dict[str, Any] = field(default_factory=dict)  # the signed metadata's list
    seq: int = 0
    unreachable: str = ""  # why the copy kept here stood in for the registry's (offline)

    def warnings(self) -> list[str]:
        label = f"{self.doc['id']}@{self.doc['version']}"
        out = [self.offline_note()] if self.unreachable else []
        if self.status == "yanked":
            out.append(f"{label} is yanked: {self.status_reason or 'no reason given'}")
        elif self.status == "deprecated":
            out.append(f"{label} is deprecated: {self.status_reason or 'no reason given'}")
        if self.deprecated:
            out.append(f"{self.doc['id']} is deprecated: {self.deprecated}")
        return out

    def offline_note(self) -> str:
        """Said whenever the cached metadata answered: a newer release or a yank since is
        unknown here."""
        return (
            f"{self.unreachable}; {self.doc['id']}'s signed metadata is the copy kept here "
            f"(seq {self.seq}): a release or yank since then is not known"
        )


def _parse_time(text: Any) -> datetime:
    try:
        value = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise IntegrityError(f"signed metadata has an invalid time {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def check_metadata(envelope: Any, key: dict[str, str], skill_id: str) -> dict[str, Any]:
    """The ``signed`` part of an envelope whose signature by ``key`` verifies, else raise."""
    if not isinstance(envelope, dict) or not isinstance(envelope.get("signed"), dict):
        raise IntegrityError(f"{skill_id}: the registry sent no signed metadata")
    signed: dict[str, Any] = envelope["signed"]
    sigs = _dicts(envelope.get("signatures"))
    message = metadata_message(signed)
    if not any(
        s.get("keyId") == key["keyId"]
        and verify_bytes(key["publicKey"], message, str(s.get("signature")))
        for s in sigs
    ):
        raise IntegrityError(f"{skill_id}: metadata is not signed by the pinned key {key['keyId']}")
    if signed.get("_type") != METADATA_TYPE or signed.get("id") != skill_id:
        raise IntegrityError(f"{skill_id}: signed metadata is for {signed.get('id')!r}")
    if not isinstance(signed.get("versions"), dict) or not isinstance(signed.get("seq"), int):
        raise IntegrityError(f"{skill_id}: signed metadata lacks versions or seq")
    problem = _shape_problem(signed)
    if problem:
        raise IntegrityError(f"{skill_id}: signed metadata is malformed ({problem})")
    return signed


def _shape_problem(signed: dict[str, Any]) -> str:
    """What a registry that signs its own metadata (the key was pinned on first use) could
    shape to crash the client instead of being refused."""
    if not all(isinstance(v, str) and isinstance(d, dict) for v, d in signed["versions"].items()):
        return "each version must map to an object"
    tags = signed.get("distTags")
    if tags is not None and not (
        isinstance(tags, dict) and all(isinstance(v, str) for v in tags.values())
    ):
        return "distTags must map names to versions"
    if not isinstance(signed.get("deprecated"), str | None):
        return "deprecated must be a message or null"
    return ""


def fetch_metadata(
    client: RegistryClient,
    cache: Cache,
    key: dict[str, str],
    skill_id: str,
    *,
    offline: bool = True,
) -> dict[str, Any]:
    """Fresh, verified, not rolled back; offline, the last accepted copy (``offline=False``:
    the registry's error instead, for a question about what the registry holds now)."""
    return _fetched(client, cache, key, skill_id, offline)[0]


def _fetched(
    client: RegistryClient, cache: Cache, key: dict[str, str], skill_id: str, offline: bool
) -> tuple[dict[str, Any], RegistryUnavailable | None]:
    """``fetch_metadata``, and the error that made the cached copy stand in (None: fresh)."""
    previous = cache.metadata(key["keyId"], skill_id)
    known = check_metadata(previous, key, skill_id) if previous else None
    try:
        envelope = client.metadata(skill_id)
    except RegistryUnavailable as exc:
        # Offline only: a registry or mirror that answers but fails the metadata alone would
        # otherwise freeze the client on its cached copy, expiry unchecked, for ever.
        if known is None or client.answered or not offline:
            raise
        return known, exc
    signed = check_metadata(envelope, key, skill_id)
    if _parse_time(signed.get("expires")) <= datetime.now(UTC):
        raise StaleMetadata(f"{skill_id}: signed metadata expired at {signed.get('expires')}")
    if known is not None and signed["seq"] < known["seq"]:
        raise RolledBack(
            f"{skill_id}: signed metadata seq {signed['seq']} is older than seq "
            f"{known['seq']} already seen"
        )
    cache.put_metadata(key["keyId"], skill_id, envelope)
    return signed, None


def check_document(doc: dict[str, Any], key: dict[str, str], sha256: str) -> None:
    """The whole version document is what the registry signed, for the listed archive."""
    sig = next((s for s in _dicts(doc.get("signatures")) if s.get("keyId") == key["keyId"]), None)
    if sig is None or not verify_bytes(
        key["publicKey"], document_message(doc), str(sig.get("document"))
    ):
        raise IntegrityError(
            f"{doc.get('id')}@{doc.get('version')}: the version document was altered or is "
            f"unsigned (document signature does not verify with {key['keyId']})"
        )
    if doc.get("archiveSha256") != sha256:
        raise IntegrityError(
            f"{doc.get('id')}@{doc.get('version')}: document and signed metadata name "
            "different archives"
        )


def check_lists_locked(signed: dict[str, Any], skill_id: str, locked: str | None) -> None:
    """Versions are never deleted, so signed metadata that does not list ``locked`` (the
    version a lockfile records for this registry) is older than the lockfile: a replay that
    the seq check cannot see on a machine with an empty cache (a fresh CI runner)."""
    if locked is not None and not isinstance(signed["versions"].get(locked), dict):
        raise RolledBack(
            f"{skill_id}: signed metadata does not list {locked}, the version in the "
            "lockfile (older metadata replayed?)"
        )


def resolve_verified(
    client: RegistryClient,
    cache: Cache,
    key: dict[str, str],
    skill_id: str,
    wanted: str,
    *,
    locked: str | None = None,
    offline: bool = True,
) -> Resolved:
    """``locked``: the version a lockfile records for this registry. Versions are never
    deleted, so signed metadata that does not list it is older than the lockfile: a mirror
    replaying a copy from before that release, which the seq check cannot catch on a machine
    with an empty cache (a fresh CI runner). ``offline=False``: no cached stand-in (an update
    asks for the newest version, which only the registry knows)."""
    signed, unreachable = _fetched(client, cache, key, skill_id, offline)
    check_lists_locked(signed, skill_id, locked)
    try:
        version = choose(signed, skill_id, wanted)
    except NotFound as exc:
        if unreachable is not None:  # the registry may well have it: say it was not asked
            raise RegistryUnavailable(
                f"{unreachable}; the copy of {skill_id}'s signed metadata kept here has no "
                f"{wanted!r}",
                hint=unreachable.hint,
            ) from None
        raise stranded(signed, skill_id, wanted, locked) or exc from None
    entry = signed["versions"][version]
    try:
        doc = client.version(skill_id, version)
    except RegistryUnavailable:
        doc = cache.docs(client.base_url, skill_id).get(version) or {}
        if not doc:
            raise
    check_document(doc, key, str(entry.get("archiveSha256")))
    if doc.get("id") != skill_id or doc.get("version") != version:
        raise IntegrityError(
            f"asked for {skill_id}@{version}, got the document of "
            f"{doc.get('id')}@{doc.get('version')}"
        )
    cache.put_doc(client.base_url, doc)
    doc = {**doc, "status": entry.get("status", "active")}
    doc["statusReason"] = entry.get("statusReason", "")
    return Resolved(
        doc,
        doc["status"],
        doc["statusReason"],
        signed.get("deprecated") or None,
        signed["versions"],
        int(signed.get("seq") or 0),
        str(unreachable) if unreachable is not None else "",
    )


def recomputed_review(contents: ArchiveContents, resolved: Resolved) -> dict[str, Any]:
    """The review summary from the archive's own bytes (status from signed metadata)."""
    try:
        front, _ = parse_frontmatter(contents.files.get("SKILL.md", b"").decode("utf-8-sig"))
    except (SkillInvalid, UnicodeDecodeError):
        front = {}
    scan = scan_files(contents.files, front, contents.executables)
    skill_md = len(contents.files.get("SKILL.md", b""))
    return {
        "id": resolved.doc["id"],
        "version": resolved.doc["version"],
        "description": str(front.get("description", "")),
        "files": [{"path": p, "size": len(d)} for p, d in sorted(contents.files.items())],
        "scripts": sorted(
            p for p, d in contents.files.items() if is_script(p, d, p in contents.executables)
        ),
        "allowedTools": front.get("allowed-tools"),
        "findings": scan.get("findings", []),
        "status": resolved.status,
        "statusReason": resolved.status_reason,
        "deprecated": resolved.deprecated,
        "sizeBytes": contents.size,
        "tokens": {"skillMd": skill_md // 4, "total": contents.size // 4},
    }


def check_archive_names(contents: ArchiveContents, skill_id: str, version: str) -> None:
    """The archive is the skill it was signed as: its top folder and its SKILL.md ``name`` are
    the signed name (what the registry checks at publish, checked again from the bytes, so a
    registry that signed a mismatch cannot install one skill in another's place)."""
    name = skill_id.partition("/")[2]
    label = f"{skill_id}@{version}"
    if contents.top != name:
        raise IntegrityError(f"{label}: archive top folder is {contents.top!r}, not {name!r}")
    try:
        front, _ = parse_frontmatter(contents.files.get("SKILL.md", b"").decode("utf-8-sig"))
    except (SkillInvalid, UnicodeDecodeError):
        front = {}
    if front.get("name") != name:
        raise IntegrityError(
            f"{label}: the archive's SKILL.md names {str(front.get('name'))[:80]!r}, "
            f"not {name!r} as signed"
        )
    if (mismatch := version_mismatch(front, version)) is not None:
        raise IntegrityError(f"{label}: the archive's {mismatch} as signed")


def signed_file_sha256(doc: dict[str, Any], path: str) -> str:
    """The sha256 the verified version document lists for ``path``; NotFound if it lists none
    (a preview is then of nothing the archive holds)."""
    entry = next((f for f in _dicts(doc.get("files")) if f.get("path") == path), None)
    if entry is None or not isinstance(entry.get("sha256"), str):
        raise NotFound(f"{doc['id']}@{doc['version']} has no file {path[:200]!r}")
    return str(entry["sha256"])


def check_preview(doc: dict[str, Any], path: str, data: bytes, expected: str) -> None:
    """Previewed bytes are the signed file's, or a mirror could show one script and install
    another."""
    if sha256_hex(data) != expected:
        raise IntegrityError(
            f"{doc['id']}@{doc['version']}: the registry served {path[:200]!r} with other bytes "
            "than the signed version lists (sha256 mismatch); do not trust this preview"
        )


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The dict items of a list from the network (anything else: none), so a malformed
    signature list is refused as unsigned, not met with a traceback."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def check_not_rolled_back(resolved: Resolved, locked_version: str, wanted: str) -> None:
    """Refuse going below the version a lockfile records, unless the user named the older
    version or the signed metadata says the locked one is yanked (``resolve_verified`` with
    ``locked`` has already refused metadata that does not list it)."""
    skill_id, chosen = resolved.doc["id"], resolved.doc["version"]
    locked = resolved.versions.get(locked_version) or {}
    exact = exact_version(wanted)
    if (
        Version.parse(chosen).key() < Version.parse(locked_version).key()
        and locked.get("status") != "yanked"
        and not (exact and exact.key() == Version.parse(chosen).key())
    ):
        raise Downgrade(
            f"{skill_id}: would go from {locked_version} (locked) down to {chosen}",
            hint=f"to go back on purpose, name the version: kiln skills install {skill_id}@{chosen}",
        )
