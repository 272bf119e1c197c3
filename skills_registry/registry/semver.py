"""Exact SemVer 2.0 versions and npm's range language, through the maintained ``node-semver``.

Published versions must be exact SemVer (no leading ``v``, no loose forms); ranges are npm's:
``1.2.3``, ``^1.2.3``, ``~1.2.3``, ``>=1.2.3 <2``, ``1.x``, ``1 || 2``, ``*`` and partial forms
``1`` (1.x) and ``1.2`` (1.2.x). Pre-releases only match a range that names a pre-release of the
same ``major.minor.patch``, as in npm, so a ``^1.0.0`` user never gets ``2.0.0-rc.1`` by surprise.
This module only adapts the library to the registry's errors and names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from skills_registry.registry.errors import UsageError

# The SemVer 2.0 grammar (semver.org); node-semver's strict mode still accepts a leading "v".
_VERSION = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?",
    re.ASCII,  # `\d` is 0-9 only: `1١.0.0` (an Arabic-Indic one) would read as 11.0.0
)
_ANY = ("", "*", "latest", "x")
MAX_VERSION_CHARS = 128


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: str = ""

    @classmethod
    def parse(cls, text: str) -> Version:
        text = text.strip()
        match = _VERSION.fullmatch(text) if len(text) <= MAX_VERSION_CHARS else None
        if match is None:
            raise UsageError(f"invalid version {clip(text)}", hint="use exact SemVer such as 1.2.3")
        major, minor, patch, pre, build = match.groups()
        return cls(
            int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else (), build or ""
        )

    def key(self) -> tuple[Any, ...]:
        """Sort key by SemVer precedence (build metadata ignored, pre-release below release;
        numeric identifiers numerically and below alphanumeric ones, a longer list above its
        prefix). A tuple, compared without parsing again: a skill's thousand versions sort in
        a millisecond, where node-semver's compare parsed both strings on every comparison."""
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease)
        return (self.major, self.minor, self.patch, 0 if pre else 1, pre)

    def core(self) -> str:
        """The version without build metadata (what precedence and ranges look at)."""
        text = f"{self.major}.{self.minor}.{self.patch}"
        return text + ("-" + ".".join(self.prerelease) if self.prerelease else "")

    def __lt__(self, other: Version) -> bool:
        return bool(self.key() < other.key())

    def __le__(self, other: Version) -> bool:
        return bool(self.key() <= other.key())

    def __str__(self) -> str:
        return self.core() + ("+" + self.build if self.build else "")


@functools.lru_cache(maxsize=64)
def _compiled(text: str) -> Any:
    """A range parsed once: ``nodesemver.satisfies`` parses it again for every version, ~140 ms
    to resolve ``^1.0.0`` among a skill's 1,000 versions."""
    return _make_range(text)


def _make_range(text: str) -> Any:
    """``nodesemver``, imported on the first range (~20 ms every `kiln run` paid on start,
    through the skill grants, without one)."""
    import nodesemver

    return nodesemver.make_range(text, loose=False)


def clip(text: str, limit: int = 80) -> str:
    """``repr(text)`` cut short: an error line about 5,000 characters stays one short line."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 2] + "…'"


def normal_range(text: str) -> str:
    """A range as the lockfile keeps it: no space around it, one space between its parts
    (``"1.0.0 "`` typed in quotes is ``1.0.0``; ``>=1  <2`` is ``>=1 <2``), so one range has
    one spelling in every lockfile and in what ``update`` and ``outdated`` print."""
    return " ".join(text.split())


def is_version(text: str) -> bool:
    """``text`` is exactly a version, as stored and signed: nothing stripped (``1.0.0 `` with
    its space would be a second ``1.0.0`` and a file name with a space on every client)."""
    return len(text) <= MAX_VERSION_CHARS and _VERSION.fullmatch(text) is not None


@dataclass(frozen=True)
class Range:
    """An npm range; ``base`` is set only for an exact version (``1.2.3`` or ``=1.2.3``)."""

    text: str
    base: Version | None = None

    @property
    def op(self) -> str:
        return "=" if self.base is not None else "range"

    @classmethod
    def parse(cls, text: str) -> Range:
        text = text.strip()
        if text in _ANY:
            return cls("*")
        exact = text.removeprefix("=").strip()
        if is_version(exact):
            return cls(text, Version.parse(exact))
        try:
            _make_range(text)
        except (ValueError, TypeError):
            raise UsageError(
                f"invalid version range {clip(text)}",
                hint="use e.g. 1.2.3, ^1.2.0, ~1.2, >=1 <2 or *",
            ) from None
        return cls(text)

    def matches(self, version: Version) -> bool:
        if self.base is not None:
            return bool(version.key() == self.base.key())
        return bool(_compiled(self.text).test(version.core()))

    def __str__(self) -> str:
        return self.text


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
