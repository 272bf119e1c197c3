"""Verified installs: resolve, download, verify, review, swap into place, lock.

Order matters: nothing touches the skills folder until the signed metadata and the version
document verify against the pinned key (``skills_registry.verified``), the archive's sha256
matches them, the registry's signature over ``id@version:sha256`` verifies, the archive unpacks
safely in memory and its tree hash matches. The review (files, scripts, scan) is then
recomputed from those verified bytes, and only after it passes does a rename put the skill in
place, so an interrupted or rejected install leaves the previous state untouched. A skill
whose files differ from its lock entry was edited locally and is never overwritten without
``force``. Frozen and CI installs never pin a key on first use. The skill folder itself (its
marker, the guard against clobbering, the swap) is ``skills_registry.skill_folder``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skills_registry.archive import (
    ArchiveContents,
    tree_hash_dir,
    unhashed,
)
from skills_registry.client import (
    Cache,
    RegistryClient,
    TrustStore,
    parse_spec,
    trusted_key,
    unpinned,
)
from skills_registry.lockfile import LockEntry, Lockfile, edit_lockfile, scope_lock
from skills_registry.registry.errors import (
    IntegrityError,
    LocallyModified,
    NotFound,
    RegistryError,
    ReviewRequired,
    UsageError,
)
from skills_registry.registry.semver import Version
from skills_registry.registry.signing import verify_release
from skills_registry.release_check import cached_tree, check_doc, fetch_verified, signature_for
from skills_registry.review import allowed_tools_list
from skills_registry.skill_folder import (
    Scope,
    check_same_signer,
    discard,
    folder_name,
    guard_target,
    place,
    read_marker,
    sweep_scope,
)
from skills_registry.verified import (
    check_not_rolled_back,
    recomputed_review,
    resolve_verified,
)

Confirm = Callable[[dict[str, Any]], bool]


@dataclass
class Installed:
    id: str
    version: str
    path: Path
    action: str  # "installed" | "updated" | "unchanged"
    findings: list[dict[str, Any]] = field(default_factory=list)
    warning: str = ""


def _requested(wanted: str, version: str, locked: LockEntry | None) -> str:
    """The range ``update`` will follow: as asked, else kept from the lock, else ``^version``."""
    if wanted != "*":
        return wanted
    if locked is not None:
        return locked.requested
    return version if Version.parse(version).prerelease else f"^{version}"


class Installer:
    """One install session against one scope; ``confirm`` is asked before new content lands."""

    def __init__(
        self,
        scope: Scope,
        *,
        yes: bool = False,
        ci: bool = False,
        force: bool = False,
        confirm: Confirm | None = None,
        trust: TrustStore | None = None,
        cache: Cache | None = None,
        grant: Confirm | None = None,
        waiting: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.scope, self.yes, self.ci, self.force, self.confirm = scope, yes, ci, force, confirm
        # Asked (after the review) whether the user grants the skill's allowed-tools.
        self.grant = grant
        self.waiting = waiting  # told when another process holds the scope
        self.trust, self.cache = trust or TrustStore(), cache or Cache()
        scope.check_inside()
        sweep_scope(scope.skills_dir)  # what a killed install or remove left
        self.lock = Lockfile.load(scope.lock_path)

    @contextmanager
    def _turn(self) -> Iterator[None]:
        """This scope to ourselves (another process waits), with the lockfile as it is now."""
        with scope_lock(self.scope.lock_path, self.waiting):
            self.lock = Lockfile.load(self.scope.lock_path)
            yield

    def install(
        self, client: RegistryClient, spec: str, *, from_lockfile: bool = False
    ) -> Installed:
        """``from_lockfile`` (an update): the registry URL came from the lockfile, not from the
        user, so a key is never pinned on first use (an edited lockfile must not pick the
        registry); and the newest version is the registry's to say, never a cached copy's."""
        with self._turn():
            return self._install(client, spec, from_lockfile)

    def _install(self, client: RegistryClient, spec: str, from_lockfile: bool) -> Installed:
        skill_id, wanted = parse_spec(spec)
        key = trusted_key(client, self.trust, first_use=not (self.ci or from_lockfile))
        locked = self.lock.entries.get(skill_id)
        # Locked from this registry: its URL, or a mirror of it (signed with the same key).
        ours = locked if locked is not None and self._same(locked, client, key) else None
        resolved = resolve_verified(
            client,
            self.cache,
            key,
            skill_id,
            wanted,
            locked=ours.version if ours else None,
            offline=not from_lockfile,  # an update: "unchanged" from a cached copy misleads
        )
        doc = resolved.doc
        check_doc(doc, skill_id)
        signature = signature_for(doc, key)
        if ours is not None:
            check_not_rolled_back(resolved, ours.version, wanted)
        target = self.scope.skills_dir / doc["name"]
        check_same_signer(target, skill_id, locked, key["keyId"], self.force)
        current = guard_target(target, skill_id, locked, self.force)
        rivals = self._rivals(skill_id)
        warning = "; ".join(resolved.warnings() + [f"{skill_id} replaces {r}" for r in rivals])
        if current == doc["treeHash"] and locked and locked.version == doc["version"]:
            return Installed(skill_id, doc["version"], target, "unchanged", warning=warning)
        contents = fetch_verified(
            client,
            self.cache,
            key,
            skill_id,
            doc["version"],
            doc["archiveSha256"],
            signature,
            doc["treeHash"],
        )
        summary = recomputed_review(contents, resolved)
        pinned = locked is not None and locked.sha256 == doc["archiveSha256"]
        self._review(summary, pinned)
        entry = LockEntry(
            id=skill_id,
            version=doc["version"],
            requested=_requested(wanted, doc["version"], locked),
            registry=client.base_url,
            sha256=doc["archiveSha256"],
            treeHash=doc["treeHash"],
            signature=signature,
            keyId=key["keyId"],
            path=self._rel(target),
            scripts=list(summary["scripts"]),
            grants=self._grants(summary, locked),
        )
        place(contents, target, self._marker(entry))
        action = "installed" if current is None else "updated"
        with edit_lockfile(self.scope.lock_path) as lock:
            for rival in rivals:  # its folder now holds this skill
                lock.entries.pop(rival, None)
            lock.entries[skill_id] = entry
        self.lock = lock
        return Installed(skill_id, doc["version"], target, action, summary["findings"], warning)

    def install_frozen(self, client_for: Callable[[str], RegistryClient]) -> list[Installed]:
        """Install exactly what the lockfile says; works offline from the cache."""
        with self._turn():
            return self._install_frozen(client_for)

    def _install_frozen(self, client_for: Callable[[str], RegistryClient]) -> list[Installed]:
        if not self.lock.entries and not self.lock.path.exists():
            raise UsageError(
                f"no lockfile at {self.lock.path}", hint="run `kiln skills install ID` first"
            )
        by_folder: dict[str, str] = {}
        for skill_id in sorted(self.lock.entries):
            other = by_folder.setdefault(folder_name(skill_id), skill_id)
            if other != skill_id:  # each would replace the other: which one is meant?
                raise UsageError(
                    f"{self.lock.path} lists {other} and {skill_id}, which install into one "
                    f"folder ({self.scope.skills_dir / folder_name(skill_id)})",
                    hint=f"keep one: kiln skills remove {other} (or {skill_id})",
                )
        results, pending = [], []
        for skill_id, entry in sorted(self.lock.entries.items()):
            target = self.scope.skills_dir / folder_name(skill_id)
            current = guard_target(target, skill_id, entry, self.force)
            # verified, and now cached; also for a folder that matches the lockfile, whose
            # treeHash is unsigned: the signed archive must have it too
            self._frozen_contents(skill_id, entry, client_for)
            if current == entry.treeHash:
                results.append(Installed(skill_id, entry.version, target, "unchanged"))
                continue
            pending.append((skill_id, entry, target))
        # Every entry verified before any is written, so one refused leaves the others as they
        # were; each is read again from the cache, one skill in memory at a time.
        for skill_id, entry, target in pending:
            contents = self._frozen_contents(skill_id, entry, client_for)
            place(contents, target, self._marker(entry))
            results.append(Installed(skill_id, entry.version, target, "installed"))
        return sorted(results, key=lambda r: r.id)

    def _frozen_contents(
        self, skill_id: str, entry: LockEntry, client_for: Callable[[str], RegistryClient]
    ) -> ArchiveContents:
        """From the cache with the pinned key when possible: no network at all offline."""
        pinned = self.trust.pinned(entry.registry)
        if pinned is None:  # never trust on first use, nor follow an entry to a new URL
            raise unpinned(entry.registry)
        if self.cache.get_blob(entry.sha256) is not None:
            return self._verify_locked(None, pinned, skill_id, entry)
        with client_for(entry.registry) as client:
            key = trusted_key(client, self.trust, first_use=False)
            return self._verify_locked(client, key, skill_id, entry)

    def _verify_locked(
        self, client: RegistryClient | None, key: dict[str, str], skill_id: str, entry: LockEntry
    ) -> ArchiveContents:
        if key["keyId"] != entry.keyId:
            raise IntegrityError(
                f"{skill_id}: locked key {entry.keyId} is not the pinned key {key['keyId']}"
            )
        return fetch_verified(
            client,
            self.cache,
            key,
            skill_id,
            entry.version,
            entry.sha256,
            entry.signature,
            entry.treeHash,
        )

    def remove(self, skill_id: str) -> Path:
        with self._turn():
            return self._remove(skill_id)

    def _remove(self, skill_id: str) -> Path:
        entry = self.lock.entries.get(skill_id)
        target = self.scope.skills_dir / folder_name(skill_id)
        owner = None if target.is_symlink() else read_marker(target).get("id")
        if entry is None and owner != skill_id:
            raise NotFound(f"{skill_id} is not installed in {self.scope.skills_dir}")
        if owner not in (None, skill_id):  # the folder holds another id of that name: only
            self._unlock(skill_id)  # the entry is this skill's (`acme/deploy`, `evil/deploy`)
            return target
        if target.is_symlink():  # a link the repository shipped: remove it, never what it names
            self._guard_removal(target, skill_id, entry)
            target.unlink()
        elif target.exists():
            self._guard_removal(target, skill_id, entry)
            discard(target, then=lambda: self._unlock(skill_id))
            return target
        self._unlock(skill_id)
        return target

    def _guard_removal(self, target: Path, skill_id: str, entry: LockEntry | None) -> None:
        """``guard_target``, with a hint for a removal (its own speaks of overwriting)."""
        try:
            guard_target(target, skill_id, entry, self.force)
        except LocallyModified as exc:
            raise LocallyModified(
                str(exc), hint="pass --force to remove it anyway; its local changes are lost"
            ) from None

    def _unlock(self, skill_id: str) -> None:
        with edit_lockfile(self.scope.lock_path) as lock:
            lock.entries.pop(skill_id, None)
        self.lock = lock

    def verify(self) -> list[dict[str, Any]]:
        """Check every locked skill on disk (tree hash, marker) and its pinned signature."""
        report = []
        for skill_id, entry in sorted(self.lock.entries.items()):
            target = self.scope.skills_dir / folder_name(skill_id)
            problems = []
            key = self.trust.pinned(entry.registry)
            if key is None or not verify_release(
                key["publicKey"], skill_id, entry.version, entry.sha256, entry.signature
            ):
                problems.append("signature does not verify with the pinned registry key")
            elif (tree := cached_tree(self.cache, entry.sha256)) is None:
                problems.append(
                    "the signed archive is not kept on this machine, so the lockfile's tree hash "
                    "is unconfirmed (`kiln skills install --frozen` fetches and checks it)"
                )
            elif tree != entry.treeHash:
                problems.append("the lockfile's tree hash is not the signed archive's")
            if not target.is_dir():
                problems.append(f"missing folder {target}")
            else:
                if read_marker(target).get("id") != skill_id:
                    problems.append("install marker missing or for another skill")
                try:
                    if tree_hash_dir(target) != entry.treeHash:
                        problems.append("files differ from the lockfile (modified locally)")
                except RegistryError as exc:
                    problems.append(str(exc))
                extra = unhashed(target)
                if extra:
                    problems.append(f"holds files not in the signed tree: {', '.join(extra)}")
            report.append(
                {"id": skill_id, "version": entry.version, "ok": not problems, "problems": problems}
            )
        return report

    def _review(self, summary: dict[str, Any], pinned: bool) -> None:
        if pinned:
            return  # the lockfile records a reviewed artifact with this exact sha256
        if self.ci:
            if summary["scripts"]:
                raise ReviewRequired(
                    f"{summary['id']}@{summary['version']} brings scripts "
                    f"({', '.join(summary['scripts'])}) that are not pinned in the lockfile"
                )
            return
        if self.yes:
            return
        if self.confirm is None or not self.confirm(summary):
            raise ReviewRequired(
                f"install of {summary['id']}@{summary['version']} was not confirmed",
                hint="review the summary and answer yes, or pass --yes",
            )

    def _grants(self, summary: dict[str, Any], locked: LockEntry | None) -> list[str]:
        """The allowed-tools the user grants: asked with the list in view; an earlier grant is
        kept only while the list is unchanged."""
        tools = allowed_tools_list(summary.get("allowedTools"))
        if not tools:
            return []
        if locked is not None and locked.grants and sorted(locked.grants) == sorted(tools):
            return list(locked.grants)
        if self.grant is not None and self.grant(summary):
            return tools
        return []

    def _rivals(self, skill_id: str) -> list[str]:
        """Other locked ids whose folder this one installs into (``acme/deploy`` beside
        ``evil/deploy``): replaced only with ``force``, and then dropped from the lockfile."""
        name = folder_name(skill_id)
        rivals = sorted(k for k in self.lock.entries if k != skill_id and folder_name(k) == name)
        if rivals and not self.force:
            raise LocallyModified(
                f"{self.scope.skills_dir / name} is where the lockfile installs {rivals[0]}, "
                f"not {skill_id}",
                hint=f"remove it first (kiln skills remove {rivals[0]}) or pass --force",
            )
        return rivals

    @staticmethod
    def _same(locked: LockEntry, client: RegistryClient, key: dict[str, str]) -> bool:
        return locked.registry == client.base_url or locked.keyId == key["keyId"]

    def _marker(self, entry: LockEntry) -> dict[str, Any]:
        return {
            "id": entry.id,
            "version": entry.version,
            "sha256": entry.sha256,
            "treeHash": entry.treeHash,
            "registry": entry.registry,
            "keyId": entry.keyId,
            "thirdParty": True,
        }

    def _rel(self, target: Path) -> str:
        try:
            return target.relative_to(self.scope.lock_path.parent).as_posix()
        except ValueError:
            return target.as_posix()
