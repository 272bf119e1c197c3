"""The secret values a run must not show: secret-looking environment values, and in CI the
credentials a checkout left in the repository's git config. ``ToolRunner.redact`` and the
headless runner's events replace each with ``[REDACTED:NAME]``, longest first.
"""

from __future__ import annotations

import os
from pathlib import Path

SECRET_NAME_HINTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def ci_secrets(root: Path) -> list[tuple[str, str]]:
    """What CI redacts: secret-looking environment values and the credentials a checkout left
    in the repository's git config (``agent.sandbox.git_credentials``), longest first."""
    from agent.sandbox.git_credentials import secrets

    return sorted([*env_secrets(), *secrets(root)], key=lambda kv: -len(kv[1]))


def env_secrets() -> list[tuple[str, str]]:
    """Secret-looking environment values, longest first (so no secret is half-redacted)."""
    return sorted(
        (
            (k, v)
            for k, v in os.environ.items()
            if len(v) >= 8 and any(h in k.upper() for h in SECRET_NAME_HINTS)
        ),
        key=lambda kv: -len(kv[1]),
    )
