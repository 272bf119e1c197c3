"""Which version of a skill to install, chosen from its verified signed metadata.

A range, a dist-tag or an exact version picks among the versions the metadata lists; a yanked
version matches only when named exactly. When nothing matches, the error lists what there is
(yanked ones marked with their reason), or, when the locked version was yanked from under a
range, names the exact version to move to.
"""

from __future__ import annotations

from typing import Any

from skills_registry.errors import SkillsError
from skills_registry.redirects import printable
from skills_registry.registry.errors import IntegrityError, NotFound, UsageError
from skills_registry.registry.id_rules import DIST_TAG_RE
from skills_registry.registry.semver import Range, Version, is_version, max_satisfying


def choose(signed: dict[str, Any], skill_id: str, wanted: str) -> str:
    """A range, a dist-tag or an exact version; yanked versions only match exactly."""
    versions = {v: str(d.get("status", "active")) for v, d in signed["versions"].items()}
    tags = signed.get("distTags") or {}
    if wanted in tags and not _is_range(wanted) and versions.get(tags[wanted]) == "yanked":
        if wanted != "latest":  # a tag set before its version was yanked
            raise NotFound(
                f"{skill_id}: dist-tag {wanted!r} names {printable(str(tags[wanted]))[:60]}, "
                "which is yanked",
                hint="name a version exactly to install a yanked one; " + _listed(signed),
            )
        chosen: str | None = max_satisfying([v for v, s in versions.items() if s != "yanked"], "*")
    elif wanted in tags and not _is_range(wanted):
        chosen = tags[wanted]
    elif wanted == "*" and tags.get("latest") and versions.get(tags["latest"]) != "yanked":
        chosen = tags["latest"]
    elif DIST_TAG_RE.fullmatch(wanted) and not _is_range(wanted):  # a dist-tag it does not have
        named = ", ".join(sorted(printable(str(t))[:40] for t in tags)[:10]) or "none"
        raise NotFound(
            f"{skill_id} has no dist-tag {printable(wanted)[:60]!r}",
            hint=f"dist-tags: {named}; " + _listed(signed),
        )
    else:
        exact = exact_version(wanted)
        pool = [
            v
            for v, s in versions.items()
            if s != "yanked" or (exact and Version.parse(v).key() == exact.key())
        ]
        chosen = max_satisfying(pool, wanted)
    if chosen is not None and not is_version(chosen):
        # Names a cache file and a lockfile entry: ``../../x`` must never get that far.
        raise IntegrityError(
            f"{skill_id}: signed metadata names an invalid version {chosen[:60]!r}"
        )
    if chosen is None or chosen not in versions:
        raise NotFound(f"no version of {skill_id} matches {wanted!r}", hint=_listed(signed))
    return chosen


def _listed(signed: dict[str, Any]) -> str:
    """The versions there are, newest first, a yanked one marked with its reason (a yanked
    version matches only when named exactly, so "available: 1.0.0" alone reads as a contradiction)."""
    shown = []
    for version in sorted(signed["versions"], key=_version_key, reverse=True)[:10]:
        entry = signed["versions"][version]
        if entry.get("status") == "yanked":
            reason = str(entry.get("statusReason") or "")
            version += f" (yanked{': ' + reason[:200] if reason else ''})"
        shown.append(version)
    if not shown:
        return "it has no versions"
    more = len(signed["versions"]) - len(shown)
    yanked = " (name a yanked version exactly to install it)" if "(yanked" in str(shown) else ""
    return printable(f"versions: {', '.join(shown)}{f' and {more} more' if more else ''}{yanked}")


def stranded(
    signed: dict[str, Any], skill_id: str, wanted: str, locked: str | None
) -> NotFound | None:
    """Nothing matches ``wanted``: when that is because the locked version was yanked, the
    error that says so and names the way off it (an exact version), not the general "name a
    yanked version" advice; else None."""
    entry = signed["versions"].get(locked) if locked else None
    live = [
        v for v, d in signed["versions"].items() if d.get("status") != "yanked" and is_version(v)
    ]
    try:  # the locked version would have matched but for its yank (`update` in its range)
        in_range = locked is not None and max_satisfying([locked], wanted) == locked
    except SkillsError:
        in_range = False
    if not in_range or not isinstance(entry, dict) or entry.get("status") != "yanked" or not live:
        return None
    reason = str(entry.get("statusReason") or "")
    releases = [v for v in live if not Version.parse(v).prerelease]
    newest = max(releases or live, key=_version_key)
    return NotFound(
        printable(
            f"{skill_id}@{locked} is yanked{f' ({reason[:200]})' if reason else ''} and no other "
            f"version matches {wanted!r}"
        ),
        hint=f"move to another by exact version: kiln skills install {skill_id}@{newest}",
    )


def _version_key(version: str) -> tuple[Any, ...]:
    return Version.parse(version).key() if is_version(version) else ()


def _is_range(text: str) -> bool:
    try:
        Range.parse(text)
    except UsageError:
        return False
    return True


def exact_version(text: str) -> Version | None:
    try:
        parsed = Range.parse(text)
    except UsageError:
        return None
    return parsed.base if parsed.op == "=" else None
