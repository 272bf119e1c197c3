"""Exact SemVer 2.0 versions and the small range language clients use to resolve them.

Ranges: ``1.2.3`` (exact), ``^1.2.3``, ``~1.2.3``, ``>=1.2.3``, ``*`` (any); partial forms
``^1``, ``1`` (1.x) and ``1.2`` (1.2.x) as in npm. Pre-releases only
match an exact range, as in npm, so a ``^1.0.0`` user never gets ``2.0.0-rc.1`` by surprise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from skills_registry.registry.errors import UsageError

_VERSION = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: str = ""

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _VERSION.match(text.strip()) if len(text) <= 128 else None
        if match is None:
            raise UsageError(f"invalid version {text!r}", hint="use exact SemVer such as 1.2.3")
        pre = tuple(match.group(4).split(".")) if match.group(4) else ()
        return cls(int(match[1]), int(match[2]), int(match[3]), pre, match.group(5) or "")

    def key(self) -> tuple[object, ...]:
        """Sort key by SemVer precedence (build metadata ignored, pre-release below release)."""
        pre: tuple[tuple[int, int, str], ...] = tuple(
            (0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease
        )
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1, pre)

    def __lt__(self, other: Version) -> bool:
        return self.key() < other.key()

    def __le__(self, other: Version) -> bool:
        return self.key() <= other.key()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + self.build
        return text


def is_version(text: str) -> bool:
    return _VERSION.match(text.strip()) is not None


@dataclass(frozen=True)
class Range:
    op: str  # "=", "^", "~", ">=", "*", "x" (same major)
    base: Version | None

    @classmethod
    def parse(cls, text: str) -> Range:
        text = text.strip()
        if text in ("", "*", "latest", "x"):
            return cls("*", None)
        for op in (">=", "^", "~", "="):
            if text.startswith(op):
                base, partial = _pad(text[len(op) :])
                return cls(op, Version.parse(base))
        base, partial = _pad(text)
        if partial == 1:  # "1" means 1.x, as in npm
            return cls("x", Version.parse(base))
        if partial == 2:  # "1.2" means 1.2.x
            return cls("~", Version.parse(base))
        return cls("=", Version.parse(base))

    def matches(self, version: Version) -> bool:
        if self.op == "=":
            assert self.base is not None
            return version.key() == self.base.key()
        if version.prerelease:
            return False
        if self.op == "*":
            return True
        base = self.base
        assert base is not None
        if version < base:
            return False
        if self.op == ">=":
            return True
        if self.op == "x":
            return version.major == base.major
        if self.op == "~":
            return (version.major, version.minor) == (base.major, base.minor)
        # "^": the left-most non-zero component is fixed.
        if base.major:
            return version.major == base.major
        if base.minor:
            return version.major == 0 and version.minor == base.minor
        return (version.major, version.minor, version.patch) == (0, 0, base.patch)

    def __str__(self) -> str:
        if self.base is None:
            return "*"
        if self.op == "x":
            return str(self.base.major)
        return ("" if self.op == "=" else self.op) + str(self.base)


def _pad(text: str) -> tuple[str, int]:
    """``1`` -> ``1.0.0`` and ``1.2`` -> ``1.2.0``; returns how many parts were given (0 = full)."""
    text = text.strip()
    if re.fullmatch(r"\d+", text):
        return f"{text}.0.0", 1
    if re.fullmatch(r"\d+\.\d+", text):
        return f"{text}.0", 2
    return text, 0


def max_satisfying(versions: Iterable[str], spec: str) -> str | None:
    """The highest version in ``versions`` matching ``spec``, or None."""
    wanted = Range.parse(spec)
    best: Version | None = None
    best_text: str | None = None
    for text in versions:
        try:
            version = Version.parse(text)
        except UsageError:
            continue
        if wanted.matches(version) and (best is None or best < version):
            best, best_text = version, text
    return best_text
