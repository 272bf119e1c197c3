"""What the shell makes of one word of a command line before the command sees it.

Bash expands a literal-looking word in three ways the parse tree does not show: brace expansion
(``r{m,}`` is the two words ``rm r``, ``config/new.y{m..m}l`` is ``config/new.yml``), pathname
expansion (``K*`` is ``KILN.md``; ``*`` is a file the checkout named ``--checkpoint-action=…``)
and the tilde forms (``~+`` is the current folder, ``~-`` the previous one, also after ``=`` in
``of=~+/x``). ``words`` gives the words bash passes on: brace expansion done as bash does it,
quotes and backslashes removed; a word whose value depends on a variable, a substitution or an
expansion the check cannot follow is ``computed`` (its text as written stands for it), and one
bash matches against file names is a ``pattern``.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from itertools import islice, product
from pathlib import Path
from typing import Any

# More words than this from one word's braces (``{1..100000}``) is not something to check.
MAX_WORDS = 256
GLOB_CHARS = "*?["
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_INTEGER = re.compile(r"[+-]?\d+")

Char = tuple[str, bool]  # a character and whether it is quoted (or escaped)


@dataclass(frozen=True)
class Word:
    text: str  # the value bash passes on; for a computed word, the word as written
    computed: bool = False  # the value depends on something the line does not show
    pattern: bool = False  # bash matches it against file names (an unquoted * ? [)
    tail: str = ""  # for a computed word, the literal text it ends with (``frame``)
    lead: str | None = None  # and the variable it starts with, if only literal text follows

    @property
    def option_like(self) -> bool:
        """May reach the command as an option: computed, or a pattern that starts with a
        wildcard (``*`` matches a file named ``--to-command=…``)."""
        return self.computed or (self.pattern and self.text[:1] in GLOB_CHARS)


def words(node: Any) -> list[Word]:
    """The words bash makes of ``node`` (a word, a quoted string, a concatenation…)."""
    text = node.text.decode("utf-8", "replace")
    chars = _chars(node)
    if chars is None:
        return [Word(text, computed=True, tail=frame(node)[1], lead=leading_variable(node))]
    expanded = _braces(chars)
    if expanded is None or len(expanded) > MAX_WORDS:
        return [Word(text, computed=True, tail=frame(node)[1], lead=leading_variable(node))]
    out = []
    for word in expanded:
        if not word and len(expanded) > 1:
            continue  # `{,a}`: an empty unquoted word goes
        tilded = _tilde(word)
        if tilded is None:
            out.append(Word(text, computed=True, tail=frame(node)[1], lead=leading_variable(node)))
            continue
        value = "".join(c for c, _ in tilded)
        out.append(Word(value, pattern=any(c and c in GLOB_CHARS and not q for c, q in tilded)))
    return out


def frame(node: Any) -> tuple[str, str]:
    """The literal text a computed word starts and ends with (``$D/a.yml``: "", "/a.yml";
    ``"$PWD/config/x"``: "", "/config/x"), quotes and backslashes removed."""
    parts = _parts(node)
    head = "".join(_take_while(parts))
    tail = "".join(reversed(_take_while(list(reversed(parts)))))
    return head, tail


def leading_variable(node: Any) -> str | None:
    """``NAME`` when the word is ``$NAME`` or ``${NAME}`` and then literal text only."""
    named = (
        [c for c in node.children if c.is_named]
        if node.type in ("concatenation", "string")
        else [node]
    )
    first = named[0] if named else None
    if (
        first is None
        or first.type not in ("simple_expansion", "expansion")
        or None in _parts(node)[1:]
    ):
        return None
    inner = [c for c in first.children if c.type not in ("$", "${", "}")]
    return inner[0].text.decode() if len(inner) == 1 and inner[0].type == "variable_name" else None


def _parts(node: Any) -> list[str | None]:
    """The pieces of a word in order: literal text, or None for what the shell computes."""
    if node.type in ("concatenation", "string"):
        out: list[str | None] = []
        for child in node.children:
            if child.type == "string_content":
                out.append(re.sub(r"\\([$`\"\\])", r"\1", child.text.decode("utf-8", "replace")))
            elif child.is_named:
                out += _parts(child)
        return out
    chars = _chars(node)
    return ["".join(c for c, _ in chars)] if chars is not None else [None]


def _take_while(parts: list[str | None]) -> list[str]:
    out = []
    for part in parts:
        if part is None:
            break
        out.append(part)
    return out


def literal(node: Any) -> str | None:
    """The one literal value of a word, or None when the shell computes it or makes it into
    several words."""
    found = words(node)
    if len(found) != 1 or found[0].computed:
        return None
    return found[0].text


def _chars(node: Any) -> list[Char] | None:
    kind = node.type
    text = node.text.decode("utf-8", "replace")
    if kind in ("word", "number", "brace_expression"):  # `{1..3}` has a node of its own
        return _unquoted(text)
    if kind == "raw_string":  # ("", True): a quoted empty word stays a word (`''{,a}`)
        return [("", True), *((c, True) for c in text[1:-1])]
    if kind == "string":
        if all(c.type == "string_content" for c in node.children if c.is_named):
            inner = re.sub(r"\\\n", "", text[1:-1])
            return [("", True), *((c, True) for c in re.sub(r"\\([$`\"\\])", r"\1", inner))]
        return None
    if kind == "concatenation":
        out: list[Char] = []
        for child in node.children:
            part = _chars(child)
            if part is None:
                return None
            out += part
        return out
    if kind == "ansi_c_string":  # `$'config/new.yml'`, `$'\x72m'`: bash decodes it as written
        return [("", True), *((c, True) for c in ansi_c(text[2:-1]))]
    return None  # $X, $(…), $"…", arithmetic: computed


_ANSI_C = re.compile(r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9a-fA-F]{1,2})"
                     r"|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})|c(.))", re.S)  # fmt: skip
_ANSI_LETTERS = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                 "r": "\r", "t": "\t", "v": "\v"}  # fmt: skip


def ansi_c(body: str) -> str:
    """The text of bash's ``$'BODY'``: its escapes decoded, cut at a NUL as bash cuts it."""

    def one(m: re.Match[str]) -> str:
        letter, octal, hex2, u4, u8, control = m.groups()
        if letter is not None:
            return _ANSI_LETTERS.get(letter, letter)
        if control is not None:
            return chr(ord(control.upper()) ^ 0x40) if control != "?" else "\x7f"
        number = int(octal, 8) & 0xFF if octal else int(hex2 or u4 or u8, 16)
        return chr(number) if number < 0x110000 else ""

    return _ANSI_C.sub(one, body).split("\x00")[0]


def _unquoted(text: str) -> list[Char] | None:
    """The characters of an unquoted word: a backslash quotes the next one (and goes)."""
    out: list[Char] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.append((text[i + 1], True))
            i += 2
            continue
        if c in "'\"$`":  # quoting or an expansion the grammar left inside a word
            return None
        out.append((c, False))
        i += 1
    return out


def _braces(word: list[Char]) -> list[list[Char]] | None:
    """Bash's brace expansion of one word; None when it cannot be told (or is too large)."""
    i = 0
    while i < len(word):
        if word[i] != ("{", False) or (i and word[i - 1] == ("$", False)):
            i += 1
            continue
        close = _matching(word, i)
        if close is None:
            i += 1
            continue
        inner = word[i + 1 : close]
        alternatives = _split_commas(inner)
        if len(alternatives) > 1:
            middles: list[list[Char]] = []
            for alternative in alternatives:
                expanded = _braces(alternative)
                if expanded is None:
                    return None
                middles += expanded
        else:
            sequence = _sequence(inner)
            if sequence is None:
                return None
            if not sequence:  # not an expansion: bash goes on after this brace
                i += 1
                continue
            middles = [[(c, True) for c in item] for item in sequence]
        rest = _braces(word[close + 1 :])
        if rest is None or len(middles) * len(rest) > MAX_WORDS:
            return None
        return [word[:i] + m + r for m, r in product(middles, rest)]
    return [word]


def _matching(word: list[Char], start: int) -> int | None:
    depth = 0
    for j in range(start, len(word)):
        if word[j] == ("{", False):
            depth += 1
        elif word[j] == ("}", False):
            depth -= 1
            if depth == 0:
                return j
    return None


def _split_commas(inner: list[Char]) -> list[list[Char]]:
    parts: list[list[Char]] = [[]]
    depth = 0
    for char in inner:
        if char == ("{", False):
            depth += 1
        elif char == ("}", False):
            depth -= 1
        if char == (",", False) and depth == 0:
            parts.append([])
        else:
            parts[-1].append(char)
    return parts


def _sequence(inner: list[Char]) -> list[str] | None:
    """``{1..3}``, ``{01..10..2}``, ``{a..e}``: the items; [] when ``inner`` is no sequence
    (bash leaves the braces as they are); None when it may be one the check does not know."""
    if any(quoted for _, quoted in inner):
        return [] if ".." not in "".join(c for c, q in inner if not q) else None
    text = "".join(c for c, _ in inner)
    if ".." not in text:
        return []
    parts = text.split("..")
    if len(parts) not in (2, 3) or (len(parts) == 3 and not _INTEGER.fullmatch(parts[2])):
        return None
    step = abs(int(parts[2])) if len(parts) == 3 and int(parts[2]) else 1
    first, last = parts[0], parts[1]
    if _INTEGER.fullmatch(first) and _INTEGER.fullmatch(last):
        a, b = int(first), int(last)
        if abs(b - a) // step + 1 > MAX_WORDS:
            return None
        padded = any(re.fullmatch(r"[+-]?0\d+", n) for n in (first, last))
        width = max(len(first), len(last)) if padded else 0
        numbers = range(a, b + (1 if b >= a else -1), step if b >= a else -step)
        return [str(n).zfill(width) if width else str(n) for n in numbers]
    letters = f"{first}{last}"
    if len(first) == len(last) == 1 and letters.isascii() and letters.isalpha():
        a, b = ord(first), ord(last)
        codes = range(a, b + (1 if b >= a else -1), step if b >= a else -step)
        return [chr(n) for n in codes]
    return None


def _tilde(word: list[Char]) -> list[Char] | None:
    """The tilde forms that name a folder the check cannot see as written: ``~+`` is the
    current folder (``./``), ``~-``, ``~N``, ``~+N`` and ``~-N`` are computed (None). ``~`` and
    ``~user`` stay for the check to expand. Also after the ``=`` of an assignment-like word."""
    head = "".join(c for c, _ in word[:64])
    starts = [0]
    match = _ASSIGNMENT.match(head)
    if match and all(not q for _, q in word[: match.end()]):
        starts.append(match.end())
    for start in reversed(starts):
        if word[start : start + 1] != [("~", False)]:
            continue
        end = start + 1
        while end < len(word) and word[end] != ("/", False):
            end += 1
        prefix = "".join(c for c, _ in word[start + 1 : end])
        if any(q for _, q in word[start + 1 : end]):
            continue  # `~'+'`: no tilde expansion
        if prefix == "+":
            word = [*word[:start], (".", True), *word[end:]]
        elif prefix == "-" or re.fullmatch(r"[+-]?\d+", prefix):
            return None
    return word


MAX_MATCHES = 1000  # past this many files, a pattern's writes are not read one by one


def matches(path: str, root: Path) -> list[str]:
    """The files a pattern the line writes (``> K*``, ``sed -i … *.md``) names now, as bash
    would expand it in ``root`` (at most ``MAX_MATCHES`` + 1); [] for a path without a
    wildcard. Files beginning with ``.`` only for a pattern naming the dot, as in bash."""
    if not any(c in path for c in GLOB_CHARS):
        return []
    pattern = os.path.expanduser(path) if path.startswith("~") else path
    pattern = pattern.replace("[^", "[!")  # bash's negation too
    found = glob.iglob(pattern, root_dir=None if os.path.isabs(pattern) else root)
    return list(islice(found, MAX_MATCHES + 1))
