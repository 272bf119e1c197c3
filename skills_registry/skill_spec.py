"""A skill spec as the commands take it, ``namespace/name[@RANGE]``: ASCII, lowercase; an id that
reads right but is not (a look-alike letter, a capital) is refused with what makes it so."""

from __future__ import annotations

import re
import unicodedata

from skills_registry.lookalike import shown, skeleton
from skills_registry.registry.errors import UsageError


def parse_spec(spec: str) -> tuple[str, str]:
    """``(id, range)``; the range is ``*`` when the spec names none."""
    skill_id, _, wanted = spec.partition("@")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*", skill_id):
        raise UsageError(f"invalid skill id '{shown(skill_id)}'{_why(skill_id)}",
                         hint="use <namespace>/<name>[@RANGE]")  # fmt: skip
    return skill_id, wanted or "*"


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
    return ""
