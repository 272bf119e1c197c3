"""The rules both metadata stores apply the same way, whatever holds the rows: a name's
look-alike key (in Python and in the SQL both stores index), where ``latest`` goes when a
version's status changes, and the checks a new version or dist-tag must pass. A store calls
them inside its own transaction; the PostgreSQL store also takes the advisory lock classes
named here.
"""

from __future__ import annotations

from skills_registry.registry.errors import (
    Conflict,
    InvalidDistTag,
    NotFound,
    ValidationFailed,
)
from skills_registry.registry.id_rules import dist_tag_refusal
from skills_registry.registry.semver import Version

# The confusable skeleton of a registry name (``[a-z0-9-]``, ids ``ns/name``): each character
# replaced by the shape it reads as, in one pass (no output is mapped again, so the steps below
# can run in sequence, in Python and in SQL alike). Digits and letters that pass for others
# (``0``/``o``, ``1``/``l``/``i``), letters that two others imitate (``m`` reads as ``rn``,
# ``w`` as ``vv``, ``d`` as ``cl``: each is expanded, so both spellings meet), separators dropped
# (``dep-loy``, ``dep_loy``, ``dep.loy`` read as ``deploy``), case folded by the caller's
# lowercase names (``lower`` below, for any other input).
LOOKALIKE_STEPS = (
    ("-", ""), ("_", ""), (".", ""), ("0", "o"), ("1", "l"), ("i", "l"),
    ("m", "rn"), ("w", "vv"), ("d", "cl"),
)  # fmt: skip


def lookalike_key(text: str) -> str:
    """The shape a registry name or id reads as; ``lookalike_sql`` is the same in SQL (both
    stores index it). Equal keys, different names: a look-alike."""
    key = text.lower()
    for old, new in LOOKALIKE_STEPS:
        key = key.replace(old, new)
    return key


def lookalike_sql(column: str) -> str:
    sql = f"lower({column})"
    for old, new in LOOKALIKE_STEPS:
        sql = f"replace({sql}, '{old}', '{new}')"
    return sql


def lookalike_sql_v1(column: str) -> str:
    """The key of migrations m006 / m005 (``0``/``1`` only), kept so that they replay as they ran."""
    return f"replace(replace({column}, '0', 'o'), '1', 'l')"


# One query for both stores (only the placeholder differs): a skill whose name reads like the
# new name (in any namespace), or whose whole id does (a look-alike namespace), but is not it.
LOOKALIKE_SQL = (
    f"SELECT id FROM skills WHERE ({lookalike_sql('name')} = {{p}} AND name <> {{p}})"
    f" OR ({lookalike_sql('id')} = {{p}} AND id <> {{p}}) ORDER BY id LIMIT 1"
)


# A transaction-level advisory lock per look-alike key (PostgreSQL): two first publishes whose
# names read alike take turns, so the second one's look-alike check sees the first one's row.
LOOKALIKE_LOCK_CLASS = 0x6B6C6B  # "klk": the lock class, beside the feed's and migrations' keys


def lookalike_refusal(skill_id: str, other: str) -> ValidationFailed:
    """The 422 for a new skill that reads like the existing ``other``."""
    return ValidationFailed(
        [
            f"{skill_id} reads like the existing skill {other} (0/o, 1/l/i, rn/m, vv/w, "
            "cl/d pass for each other and '-' is not read); choose a name that does not"
        ]
    )


def latest_after_status(
    tag: str | None, live_before: list[str], live_after: list[str]
) -> str | None:
    """``latest`` after a version's status changed (``live_*``: the versions not yanked).

    It follows the newest live release while it named that release (or nothing, or a version
    now yanked); a ``latest`` its publisher moved elsewhere (back to 1.0.0 while 2.0.0 is bad)
    stays, whatever happens to other versions.
    """
    if tag is None or tag == newest_release(live_before) or tag not in live_after:
        return newest_release(live_after)
    return tag


def newest_release(versions: list[str]) -> str | None:
    releases = [Version.parse(v) for v in versions if not Version.parse(v).prerelease]
    return str(max(releases, key=Version.key)) if releases else None


def check_tag_target(skill_id: str, tag: str, version: str, status: str | None) -> None:
    """A dist-tag names a published version that is not yanked: yanked versions drop out of
    resolution, and a tag is resolution."""
    if status is None:
        raise NotFound(f"no version {skill_id}@{version}")
    if status == "yanked":
        raise Conflict(
            f"{skill_id}@{version} is yanked: dist-tag {tag!r} cannot name it",
            hint="restore it first (status active), or tag another version",
        )


def check_precedence_free(skill_id: str, version: str, published: list[str]) -> None:
    """409 for a version equal to a ``published`` one but for build metadata (1.0.0+b5 beside
    1.0.0): one version, which ranges could otherwise resolve to either."""
    wanted = Version.parse(version).key()
    for other in published:
        if Version.parse(other).key() == wanted:
            raise Conflict(
                f"{skill_id}@{version} has the same precedence as the published {other} "
                "(build metadata after '+' does not make a new version)",
                hint="bump the version number instead",
            )


MAX_DIST_TAGS = 100  # per skill, `latest` included: every one is in each signed metadata
TAG_LOCK_CLASS = 0x6B7467  # "ktg": PostgreSQL's per-skill lock while a dist-tag is set


def check_tag_room(skill_id: str, tag: str, tags: list[str]) -> None:
    """A new dist-tag fits beside the skill's ``tags`` (moving one always does): each read of
    its signed metadata lists every tag, and tags cost a publisher nothing to make."""
    if tag not in tags and len(tags) >= MAX_DIST_TAGS:
        raise Conflict(
            f"{skill_id} has {len(tags)} dist-tags; the limit is {MAX_DIST_TAGS}",
            hint="move an existing dist-tag, or remove one first (DELETE .../dist-tags/TAG)",
        )


def check_dist_tag(tag: str) -> None:
    """The dist-tag name rule every store applies to a tag it sets (``id_rules``)."""
    if (refusal := dist_tag_refusal(tag)) is not None:
        raise InvalidDistTag(refusal, hint="name the tag like 'beta', 'next' or 'stable-2'")
