"""A skill spec as the commands take it, ``namespace/name[@RANGE]``: ASCII, lowercase; an id that
reads right but is not (a look-alike letter, a capital) is refused with what makes it so."""

from __future__ import annotations

import unicodedata

from skills_registry.lookalike import shown, skeleton
from skills_registry.registry.errors import UsageError
from skills_registry.registry.id_rules import ID_RULE, SKILL_ID_RE
from skills_registry.registry.semver import normal_range


def parse_spec(spec: str) -> tuple[str, str]:
    """``(id, range)``; the range is ``*`` when the spec names none, else as ``normal_range``
    spells it (the lockfile stores it)."""
    skill_id, _, wanted = spec.partition("@")
    # the registry's own rules: an id past them names no skill on any registry, so it is
    # refused here (exit 2) rather than asked for (a 404)
    if not SKILL_ID_RE.fullmatch(skill_id):
        raise UsageError(f"invalid skill id '{shown(skill_id)}'{_why(skill_id)}",
                         hint="use <namespace>/<name>[@RANGE]")  # fmt: skip
    return skill_id, normal_range(wanted) or "*"


def _why(skill_id: str) -> str:
    """What makes an id that reads right invalid: a look-alike letter (Cyrillic ``а`` for
    ``a``, shown escaped, since printed as is the id looks valid) or a capital."""
    odd = next((c for c in skill_id if not c.isascii()), None)
    if odd is not None:
        name = unicodedata.name(odd, f"U+{ord(odd):04X}")
        return (
            f": {shown(odd)} ({name}) is not ASCII; registry ids are ASCII, so a letter that "
            f"only looks Latin never names another skill (it reads as {skeleton(skill_id)!r})"
        )
    if skill_id != skill_id.lower():
        return f": ids are lowercase ({skill_id.lower()!r})"
    namespace, _, name = skill_id.partition("/")
    if len(namespace) > 40 or len(name) > 64:
        return ": a namespace has at most 40 characters and a name at most 64"
    if namespace.endswith("-") or name.endswith("-"):
        return ": a namespace or name ends in a letter or digit"
    return f": {ID_RULE}"  # `evil\n/x`, an id a registry stored before its rules held
