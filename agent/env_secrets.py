"""The secret values a run must not show: secret-looking environment values, and in CI the
credentials a checkout left in the repository's git config. ``ToolRunner.redact`` and the
headless runner's events replace each with ``[REDACTED:NAME]``, longest first.

What a session stored is shown again later (`kiln sessions list|show|search`, the editors'
session lists and load replays), and a task may
hold a credential typed into it, which is no environment value: ``redact`` also takes out words
with a credential's shape (``TOKEN_PREFIX``: ``ghp_…``, ``sk-…``, ``AKIA…``; a JSON Web Token; a
URL's password), and an end of the text that begins a secret, since a title is cut at 80
characters.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from agent.sandbox.env import TOKEN_PREFIX

SECRET_NAME_HINTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
TOKEN_CHARS = r"[A-Za-z0-9_\-]"
# at the start or after a separator, as agent.sandbox.env has it: not inside a word or a path
TOKEN_START = r"""(?:^|(?<=[\s:=,;"'`(<\[]))"""
SHAPED = re.compile(
    rf"{TOKEN_START}{TOKEN_PREFIX}{TOKEN_CHARS}{{12,}}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)?"  # a JSON Web Token
    r"|(?<=://)[^/\s@:]*:[^/\s@]+(?=@)"  # user:password in scheme://user:password@host
)
SHAPED_END = re.compile(rf"{TOKEN_START}{TOKEN_PREFIX}{TOKEN_CHARS}*$")  # a token cut short
SHORTEST_END = 6  # characters of a secret at the end of a text that count as its beginning


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


def redact(text: str, secrets: list[tuple[str, str]]) -> str:
    """``text`` with each of ``secrets`` (longest first) as ``[REDACTED:NAME]`` and each word
    of a credential's shape as ``[REDACTED]``, an end that begins either included."""
    for name, value in secrets:
        text = text.replace(value, f"[REDACTED:{name}]")
    text = SHAPED_END.sub("[REDACTED]", SHAPED.sub("[REDACTED]", text))
    for name, value in secrets:  # the longest end of the text that begins a secret
        tail = text[-(len(value) - 1) :]
        at = tail.find(value[:SHORTEST_END])
        while at != -1:
            if value.startswith(tail[at:]):
                return f"{text[: len(text) - len(tail) + at]}[REDACTED:{name}]"
            at = tail.find(value[:SHORTEST_END], at + 1)
    return text


def found_in(text: str, secrets: list[tuple[str, str]]) -> set[str]:
    """The values ``redact`` takes out of ``text``: each of ``secrets`` in it and each word of
    a credential's shape."""
    return {v for _, v in secrets if v in text} | {m.group(0) for m in SHAPED.finditer(text)}


def redact_all(value: Any, secrets: list[tuple[str, str]]) -> Any:
    """``redact`` over each string in a JSON value (keys kept)."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: redact_all(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_all(v, secrets) for v in value]
    return value
