"""Skill names that read the same: the check behind "a repository skill cannot pass for yours".

A skill name may use any letters (the spec allows Unicode), so a repository can name its skill
``dеploy`` with a Cyrillic ``е`` and sit in the catalog beside the user's ``deploy``, where the
model (and a person skimming the list) sees two skills called deploy. ``skeleton`` maps a name
to the shape it reads as: compatibility forms folded (NFKC, then case), accents dropped, and the
common look-alike letters of Cyrillic, Greek and Armenian, plus ``0``/``1``, replaced by the
Latin letter they imitate. Two names with the same skeleton look the same; the table is a
small subset of Unicode's confusables (UTS #39), the letters a lowercase skill name can use.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_LATIN_LOOKALIKES = {
    # Cyrillic
    "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "ё": "e", "ҽ": "e", "һ": "h",
    "і": "i", "ї": "i", "ј": "j", "к": "k", "ӏ": "l", "м": "m", "н": "h", "о": "o",
    "р": "p", "ԛ": "q", "ѕ": "s", "т": "t", "ս": "u", "у": "y", "ѵ": "v", "ԝ": "w",
    "х": "x", "ъ": "b", "ь": "b", "г": "r", "п": "n",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "μ": "u", "ν": "v",
    "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w",
    # Armenian
    "օ": "o", "ց": "g", "հ": "h", "ո": "n", "զ": "q",
    # Digits and Latin letters that read as other Latin letters
    "0": "o", "1": "l", "ı": "i", "ɡ": "g", "ɑ": "a",
}  # fmt: skip


def skeleton(name: str) -> str:
    """The shape ``name`` reads as: equal skeletons mean the names look alike."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    bare = "".join(c for c in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(c))
    mapped = "".join(_LATIN_LOOKALIKES.get(c, c) for c in bare)
    return mapped.replace("_", "-")


def letter_shapes(text: str) -> str:
    """``text`` with each character that reads as one Latin letter replaced by it (a fullwidth
    ``ｅ``, a Cyrillic ``е``, a mathematical bold ``𝐞``, a small capital ``ᴇ``, an ``é``), the
    rest as they are: of the same length, so a match in the result is a match at the same place
    in ``text``."""
    if text.isascii():
        return text
    return text.translate({ord(c): _letter_shape(c) for c in set(text) if not c.isascii()})


# Small capitals read as their letters (``ᴇxternal``); kept out of ``skeleton``, whose values a
# registry stores.
_SMALL_CAPITALS = dict(zip("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ", "abcdefghijklmnoprstuvwyz", strict=True))


@lru_cache(maxsize=4096)
def _letter_shape(char: str) -> str:
    shape = _SMALL_CAPITALS.get(char) or skeleton(char)
    return shape if len(shape) == 1 else char


# Characters a reader does not see: controls other than line breaks and tabs, format characters
# (zero-width, bidi, soft hyphen, word joiner, tags), combining and variation marks, unassigned
# and private code points, and the Hangul fillers (letters that render as nothing).
_SHOWN_CONTROLS = frozenset("\t\n\v\f\r")
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
_UNSEEN_KINDS = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Me", "Mn"})
_ASCII_UNSEEN = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def unseen_in(text: str) -> str:
    """The characters of ``text`` no one sees when it is shown (a zero-width space, a bidi mark,
    an escape character, a combining mark), each once, in code point order: a pattern that
    matches text as a reader takes it in skips any run of them."""
    if text.isascii() and not _ASCII_UNSEEN.search(text):
        return ""
    return "".join(sorted(c for c in set(text) if _unseen(c)))


@lru_cache(maxsize=4096)
def _unseen(char: str) -> bool:
    if char in _SHOWN_CONTROLS:
        return False
    return char in _BLANK_LETTERS or unicodedata.category(char) in _UNSEEN_KINDS


def shown(name: str) -> str:
    """``name`` with every non-ASCII letter spelled out, so a note shows what differs."""
    return name.encode("ascii", "backslashreplace").decode("ascii")
