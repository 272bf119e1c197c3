"""A number or a switch a user sets (an environment variable, a flag read as text), read the
same way by every package, so each setting refuses the same spellings with its own one-line error.

Python's own readers are looser than a setting should be: ``float`` takes ``inf``, ``nan``,
``1_000`` and other scripts' digits (``١٢``), ``int`` takes the last two, and ``str.isdigit``
passes ``²``, which ``int`` then refuses with a ValueError (an "internal error" in the CLI).
"""

from __future__ import annotations

import math
import re

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WHOLE = re.compile(r"[+-]?[0-9]+")
_LONGEST = 64  # characters: no setting is meant past this (and int() of 4,300 digits raises)


def number_in(text: str, low: float, high: float, *, above_low: bool = False) -> float | None:
    """``text`` (spaces around it ignored) as a plain decimal number in ASCII (``30``, ``0.5``,
    ``1e3``) from ``low`` to ``high`` (above ``low`` with ``above_low``), else None, for the
    caller to refuse in its own words."""
    text = text.strip()
    if len(text) > _LONGEST or not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    if not (math.isfinite(value) and low <= value <= high) or (above_low and value == low):
        return None
    return value


def whole_in(text: str, low: int, high: int) -> int | None:
    """``text`` (spaces around it ignored) as ASCII digits (a sign allowed) from ``low`` to
    ``high``, else None."""
    text = text.strip()
    if len(text) > _LONGEST or not _WHOLE.fullmatch(text):
        return None
    value = int(text)
    return value if low <= value <= high else None


ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off", "")
SWITCH_WORDS = "1 or 0 (true/false, yes/no, on/off)"  # for the caller's error line


def switch(text: str) -> bool | None:
    """A yes/no setting (``KILN_CI``, ``KILN_DEBUG``): one of ``ON`` is True, one of ``OFF`` (empty
    too) False, any case, spaces around ignored; another word None, for the caller to refuse:
    ``KILN_CI=y`` silently meant "off", ``KILN_DEBUG=0`` meant "on"."""
    word = text.strip().lower()
    return True if word in ON else False if word in OFF else None
