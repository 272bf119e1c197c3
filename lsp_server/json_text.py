"""Reading a client's JSON as JSON: what Python's parser takes beyond it is refused or mended.

Both servers read what a client sends with ``json.loads``, which takes ``NaN``, ``Infinity`` and
``1e400`` (read as infinity), none of them JSON, and lone UTF-16 surrogate escapes (``"\\ud800"``),
which become strings no UTF-8 encoder takes: a SQLite query, a file write or the answer itself
then failed deep inside a handler as an internal error. Here the constants are a parse error and
each lone surrogate is read as U+FFFD, the replacement character, as a UTF-8 decoder reads a
broken sequence. A text of more than a million values (``[0,0,0,…]``: two bytes each, some
forty bytes each once parsed) is refused before it is parsed: no message of either protocol
holds that many. Bytes are read as UTF-8, the encoding of JSON between systems (RFC 8259) and of
both protocols: the parser also guessed UTF-16 and UTF-32, so a line in UTF-16 was served.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A \u escape of a surrogate in the raw text, or the three bytes UTF-8 would encode one in
# (ED A0-BF xx, "CESU-8": not UTF-8, yet ``json.loads`` decodes bytes with "surrogatepass" and
# reads them as one): the ways one reaches a parsed string. Pairs of escapes are joined by the
# parser; what is left, and each surrogate sent as bytes (even half of a pair), is read as U+FFFD.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\xed[\xa0-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_VALUES = 1_000_000
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_EMPTY = re.compile(rb"[\[{][ \t\r\n]*[\]}]")


class TooManyValues(ValueError):
    """A JSON text of more than ``MAX_VALUES`` values: refused unparsed."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} is too large for a double")
    return value


def loads(data: bytes | str) -> tuple[Any, bool]:
    """(the parsed value, whether a lone surrogate was replaced). Raises ValueError (a
    UnicodeDecodeError included) for text that is not JSON, RecursionError past the stack."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if (count := value_count(raw)) > MAX_VALUES:
        raise TooManyValues(f"more than {MAX_VALUES:,} JSON values in one message ({count:,})")
    if isinstance(data, bytes):  # UTF-8 only: ``json.loads`` would take UTF-16 or UTF-32 bytes
        data = data.decode("utf-8", "surrogatepass").removeprefix("\ufeff")  # a BOM is ignored
    value = json.loads(data, parse_constant=_no_constant, parse_float=_finite)
    if _SURROGATE_ESCAPE.search(raw) is None:
        return value, False
    return _mend(value), True


def value_count(raw: bytes) -> int:
    """How many values (containers, strings, numbers, literals; keys not counted) a JSON text
    holds, without parsing it: 1 + commas + opening brackets - empty containers, once strings
    are set aside. Exact for JSON; some number for what is not. Below the bound that ignores
    strings (most texts) the bound is returned."""
    bound = 1 + raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if bound <= MAX_VALUES:
        return bound
    bare = _STRING.sub(b"0", raw)
    opened = bare.count(b"[") + bare.count(b"{")
    return 1 + bare.count(b",") + opened - len(_EMPTY.findall(bare))


def _mend(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_mend(item) for item in value]
    if isinstance(value, dict):
        return {_mend(key): _mend(item) for key, item in value.items()}
    return value
