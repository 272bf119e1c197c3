"""The signed, short-lived metadata of one skill: what a client resolves versions from.

Everything a client acts on besides the immutable version documents lives here: each
version's status (active, deprecated, yanked) with its reason and archive sha256, the
dist-tags and the skill's deprecation message. ``seq`` is the skill's newest change-feed
number, so it grows with every write; ``expires`` bounds how long a mirror may keep serving a
frozen copy. It is signed per request (an ed25519 signature costs microseconds), which keeps
the expiry fresh without a background job.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from skills_registry.registry.errors import FIND_SKILL_HINT, NotFound
from skills_registry.registry.signing import Signer
from skills_registry.registry.storage import MetadataStore

METADATA_TYPE = "kiln-skill-metadata"
DEFAULT_TTL_SECONDS = 24 * 3600


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def skill_metadata(
    store: MetadataStore,
    signer: Signer,
    skill_id: str,
    *,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    now: datetime | None = None,
) -> dict[str, Any]:
    skill = store.get_skill(skill_id)
    if skill is None:
        raise NotFound(f"no skill {skill_id}", hint=FIND_SKILL_HINT)
    issued = now or datetime.now(UTC)
    signed = {
        "_type": METADATA_TYPE,
        "id": skill_id,
        "seq": int(skill.get("changeSeq") or 0),
        "issuedAt": iso(issued),
        "expires": iso(issued + timedelta(seconds=ttl_seconds)),
        "versions": {
            v["version"]: {
                "status": v["status"],
                "statusReason": v.get("statusReason") or "",
                "archiveSha256": v["archiveSha256"],
            }
            for v in store.versions(skill_id)
        },
        "distTags": dict(skill.get("distTags") or {}),
        "deprecated": skill.get("deprecated") or None,
    }
    return signer.sign_metadata(signed)
