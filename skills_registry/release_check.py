"""A release checked before anything of it is written: the version document names what was asked
for and carries a signature by the pinned key; the archive (downloaded, or from the cache and
checked the same) matches its sha256, the registry's signature over ``id@version:sha256``
verifies, and it unpacks in memory to the published tree hash with names a skill may hold."""

from __future__ import annotations

from typing import Any

from skills_registry.archive import ArchiveContents, read_archive, sha256_hex, tree_hash
from skills_registry.client import Cache, RegistryClient
from skills_registry.registry.errors import ArchiveError, IntegrityError
from skills_registry.registry.signing import verify_release
from skills_registry.verified import check_archive_names


def check_doc(doc: dict[str, Any], skill_id: str) -> None:
    """The document names what we asked for; its name is the folder we will write (no '..')."""
    if doc.get("id") != skill_id or doc.get("name") != skill_id.partition("/")[2]:
        raise IntegrityError(f"registry answered {doc.get('id')!r} for {skill_id!r}")
    for key in ("version", "archiveSha256", "treeHash"):
        if not isinstance(doc.get(key), str):
            raise IntegrityError(f"{skill_id}: version document lacks {key!r}")


def signature_for(doc: dict[str, Any], key: dict[str, str]) -> str:
    """The signature by the pinned key among the version document's, or ``IntegrityError``."""
    sigs = doc.get("signatures")
    for sig in sigs if isinstance(sigs, list) else []:
        if isinstance(sig, dict) and sig.get("keyId") == key["keyId"]:
            return str(sig["signature"])
    raise IntegrityError(
        f"{doc['id']}@{doc['version']} is not signed by the pinned key {key['keyId']}"
    )


def fetch_verified(
    client: RegistryClient | None,
    cache: Cache,
    key: dict[str, str],
    skill_id: str,
    version: str,
    sha256: str,
    signature: str,
    expected_tree: str,
) -> ArchiveContents:
    """Vetted contents, or ``IntegrityError``; cache hits are verified like downloads.

    ``client`` may be None when the caller knows the blob is cached (offline frozen installs).
    """
    archive = cache.get_blob(sha256)
    if archive is None:
        if client is None:
            raise IntegrityError(f"{skill_id}@{version}: archive {sha256[:12]}… is not cached")
        archive = client.download(skill_id, version)
    if sha256_hex(archive) != sha256:
        raise IntegrityError(
            f"{skill_id}@{version}: archive sha256 {sha256_hex(archive)[:12]}… does not match {sha256[:12]}…"
        )
    if not verify_release(key["publicKey"], skill_id, version, sha256, signature):
        raise IntegrityError(
            f"{skill_id}@{version}: signature does not verify with the pinned key {key['keyId']}"
        )
    contents = read_archive(archive)
    if (tree := tree_hash(contents.files)) != expected_tree:
        raise IntegrityError(  # the version document's, or the lockfile's (not signed)
            f"{skill_id}@{version}: unpacked files do not match the tree hash "
            f"{expected_tree[:12]}… (the signed archive's is {tree[:12]}…)"
        )
    check_archive_names(contents, skill_id, version)
    cache.put_blob(archive)
    return contents


def cached_tree(cache: Cache, sha256: str) -> str | None:
    """The tree hash of the archive ``sha256`` kept on this machine, None when none is kept.
    A lockfile's ``treeHash`` is not signed (its signature covers ``id@version:sha256``), so
    what a folder is checked against must first be found to be the signed archive's."""
    archive = cache.get_blob(sha256)  # read back only when its bytes hash to ``sha256``
    if archive is None:
        return None
    try:
        return tree_hash(read_archive(archive).files)
    except ArchiveError:
        return None
