"""The environment a sandboxed command gets: the host's, minus anything that looks secret.

A variable is dropped when its NAME looks like a credential (KEY, TOKEN, SECRET, PASSWORD,
PASSWD, CREDENTIAL, AUTH, COOKIE, PRIVATE, SESSION, DSN; PASS, PWD, JWT as a ``_``-separated
word: ``MYSQL_PWD``, ``SMTP_PASS``, ``CI_JOB_JWT``; cloud and CI credential prefixes) or its
VALUE has the shape of a credential (``ghp_``, ``github_pat_``, ``sk-``, ``AKIA``, ``xox?-`` at
its start or after a separator, as in ``x-access-token:ghp_…``; a PEM private key, a JSON Web
Token, a URL with a password: ``postgres://u:pw@db``, ``http_proxy=http://u:pw@proxy``). ``env_pass`` in the user's settings keeps named variables
anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|PRIVATE|SESSION|DSN|WEBHOOK",
    re.IGNORECASE,
)
# Short words that are credentials only as a whole ``_``-separated part (not PASSTHROUGH, OLDPWD).
SECRET_WORD = re.compile(r"(^|_)(PASS|PWD|JWT|PASSPHRASE|APIKEY|CREDS)(_|$)", re.IGNORECASE)
SECRET_PREFIXES = (
    "AWS_", "AZURE_", "GOOGLE_", "GCP_", "GCLOUD_", "CLOUDSDK_", "GH_", "GITHUB_TOKEN",
    "ACTIONS_", "NPM_", "PYPI_", "TWINE_", "DOCKER_", "HF_", "HUGGING", "ANTHROPIC_", "OPENAI_",
    "KILN_",
)  # fmt: skip
# How a credential of a well-known service begins (GitHub, GitLab, OpenAI and Anthropic, Stripe,
# AWS, Slack, Google); also what `kiln sessions` redacts from a typed task (agent.env_secrets).
TOKEN_PREFIX = (
    r"(ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|sk-|sk_live_|rk_live_|AKIA|ASIA|xox[abpr]-|AIza)"
)
SECRET_VALUE = re.compile(
    # a token prefix at the start or after a separator: ``x-access-token:ghp_…`` (Bundler's
    # ``BUNDLE_GITHUB__COM``), ``Bearer glpat-…``; not inside a word or a path (``/opt/sk-tools``)
    rf"(^|[\s:=,;\"']){TOKEN_PREFIX}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|^eyJ[A-Za-z0-9_-]{8,}\.eyJ"  # a JSON Web Token (header.payload)
    r"|^[A-Za-z][A-Za-z0-9+.-]*://[^/\s@:]*:[^/\s@]+@"  # scheme://user:password@host
)
# Harmless names that match the patterns above.
KEEP = {
    "XDG_SESSION_TYPE",
    "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP",
    "KEYTIMEOUT",
    "PWD",
    "OLDPWD",
    "KILN_SKILL_DIR",  # a sidecar tool's own folder (skills_registry.deferred)
}


def is_secret(name: str, value: str) -> bool:
    if name in KEEP:
        return False
    upper = name.upper()
    return bool(
        SECRET_NAME.search(upper)
        or SECRET_WORD.search(upper)
        or upper.startswith(SECRET_PREFIXES)
        or upper == "SSH_AUTH_SOCK"
        or SECRET_VALUE.search(value)
    )


def scrub(env: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without secret-looking variables (``keep`` names survive)."""
    kept = set(keep)
    return {k: v for k, v in env.items() if k in kept or not is_secret(k, v)}
