"""What a skill id may be, ``namespace/name``: the registry refuses any other at publish and
account creation, and the client refuses it before asking (``skills_registry.skill_spec``).
Kept apart so the client reads the rules without loading the server's storage."""

from __future__ import annotations

import re

NAMESPACE_PART = r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?"  # at most 40, ends in a letter or digit
NAME_PART = r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?"  # at most 64, ends in a letter or digit
# \A and \Z, not ^ and $: `$` also matches before a trailing newline, which let `evil\n` be a
# namespace (a token for it published `evil\n/x`, whose Location header broke the answer).
NAMESPACE_RE = re.compile(f"\\A{NAMESPACE_PART}\\Z")
NAME_RE = re.compile(f"\\A{NAME_PART}\\Z")
SKILL_ID_RE = re.compile(f"{NAMESPACE_PART}/{NAME_PART}")  # with fullmatch
