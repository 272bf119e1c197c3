"""What a skill id may be, ``namespace/name``: the registry refuses any other at publish and
account creation, and the client refuses it before asking (``skills_registry.skill_spec``).
Kept apart so the client reads the rules without loading the server's storage."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from skills_registry.registry.errors import UsageError
from skills_registry.registry.semver import Range

NAMESPACE_PART = r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?"  # at most 40, ends in a letter or digit
NAME_PART = r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?"  # at most 64, ends in a letter or digit
# \A and \Z, not ^ and $: `$` also matches before a trailing newline, which let `evil\n` be a
# namespace (a token for it published `evil\n/x`, whose Location header broke the answer).
NAMESPACE_RE = re.compile(f"\\A{NAMESPACE_PART}\\Z")
NAME_RE = re.compile(f"\\A{NAME_PART}\\Z")
SKILL_ID_RE = re.compile(f"{NAMESPACE_PART}/{NAME_PART}")  # with fullmatch
ID_RULE = (
    "a namespace is lowercase a-z, digits and inner '-' (at most 40 characters), a name the "
    "same (at most 64)"
)


# A dist-tag: 1-32 characters, lowercase a-z, digits and inner '-', starting with a letter;
# never a range (`x`, `v1`: `install ID@v1` reads those as ranges, so such a tag would name
# nothing), `latest` apart.
DIST_TAG_RE = re.compile(r"[a-z](?:[a-z0-9-]{0,30}[a-z0-9])?")  # with fullmatch
DIST_TAG_RULE = (
    "a dist-tag is 1 to 32 characters: lowercase a-z, digits and inner '-', starting with a "
    "letter, and no version range ('x', 'v1')"
)


def dist_tag_refusal(tag: str) -> str | None:
    """Why ``tag`` cannot be a dist-tag, or None when the rule allows it."""
    if DIST_TAG_RE.fullmatch(tag):
        if tag == "latest":
            return None
        try:
            Range.parse(tag)
        except UsageError:
            return None
    return f"invalid dist-tag '{escaped(tag[:60])}{'…' if len(tag) > 60 else ''}': {DIST_TAG_RULE}"


def escaped(text: str) -> str:
    """``text`` on one line, a newline or other control character spelled out (``evil\\n``)."""
    return text.encode("unicode_escape").decode("ascii")


def id_refusal(skill_id: str) -> str | None:
    """Why the registry serves nothing under ``skill_id``, or None for an id its rules allow.
    Ids written before the rules held (``evil\\n/x``) stay in a database; they are refused by
    exact id as they are left out of every listing, never served nor installed."""
    if SKILL_ID_RE.fullmatch(skill_id):
        return None
    return f"skill id '{escaped(skill_id)}' breaks the registry's id rules ({ID_RULE})"


def namespace_refusal(namespace: str) -> str | None:
    """The same for a namespace, as a token names it."""
    if NAMESPACE_RE.match(namespace):
        return None
    return f"namespace '{escaped(namespace)}' breaks the registry's id rules ({ID_RULE})"


def served_changes(
    read: Callable[[int, int], list[dict[str, Any]]], since: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """The change feed's page after ``since`` without the entries of ids the rules refuse
    (``read(since, limit)`` is the store's raw feed), and the ``nextSince`` to resume from.
    Pages are read on past such entries, so an empty page still means the end of the feed (a
    mirror stops there), and ``nextSince`` steps over refused entries at a page's end."""
    limit = max(1, min(limit, 1000))
    kept: list[dict[str, Any]] = []
    cursor = since
    while len(kept) < limit:
        raw = read(cursor, limit)
        if not raw:
            break
        kept += [entry for entry in raw if id_refusal(str(entry["id"])) is None]
        cursor = int(raw[-1]["seq"])
    if len(kept) > limit:
        kept = kept[:limit]
        cursor = int(kept[-1]["seq"])
    return kept, cursor
