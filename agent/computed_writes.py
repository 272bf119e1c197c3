"""A write to a path the shell computes (``echo x > $f``, ``cp x "$PWD/config/a.yml"``,
``for f in config/*.yml; do … > "$f"; done``) meets the deny rules as a pattern: any path that
ends as the word's literal end does (``config/a.yml``), the computed part anything, ``..`` and
an absolute start included. Before, such a line was only "not understood", which yolo runs:
``D=config; cp x $D/a.yml`` wrote past a ``Write(config/**)`` deny rule there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from agent.made_names import Made
from agent.shell_words import frame, leading_variable, literal


def guessed(tail: str) -> list[Made]:
    """Any path ending in ``tail`` (after its last ``../``), relative or absolute."""
    end = tail.rsplit("../", 1)[-1].lstrip("/") if ".." in tail else tail.lstrip("/")
    return [Made("", end, unlisted=True), Made("/", end, unlisted=True)]


Word = tuple[str | None, str]  # the variable a computed word starts with, its literal end


def guessed_writes(named: Iterable[str], computed: dict[str, Word]) -> list[Word]:
    """The computed words (their text as written -> ``Word``) that end the paths ``named``:
    ``cp x $F``, ``dd of="$HOME/.bashrc"``."""
    return [word for w in named for text, word in computed.items() if w and text.endswith(w)]


class Values:
    """What each variable the line sets may hold, so that ``out=build/log.txt; … > $out`` or
    ``for f in src/*.py; do … > "$f.bak"; done`` meets the rules as those paths rather than as
    any path: the literal value of its one plain assignment (``$(mktemp)``: a file in /tmp), or
    the words of its one ``for``. Set twice, or by anything else (``read``, ``X=v cmd``): not
    known."""

    def __init__(self) -> None:
        self.known: dict[str, list[str] | None] = {}

    def set(self, name: str, values: list[str] | None = None) -> None:
        self.known[name] = None if name in self.known else values

    def guesses(self, word: Word) -> list[Made]:
        lead, tail = word
        values = self.known.get(lead) if lead is not None else None
        if values is None:
            return guessed(tail)
        out = []
        for value in values:  # `src/*.py`: any name between its first and last wildcard
            spots = [i for i, ch in enumerate(value) if ch in "*?["]
            out.append(Made(value[: spots[0]], value[spots[-1] + 1 :] + tail, unlisted=True)
                       if spots else Made(value + tail, letters=""))  # fmt: skip
        return out


def word_of(node: Any) -> Word:
    return leading_variable(node), frame(node)[1]


def loop_values(node: Any) -> list[str] | None:
    """The words ``for NAME in WORDS`` gives NAME, when all are literal."""
    words = [literal(c) for c in node.children_by_field_name("value")]
    return [w for w in words if w is not None] if words and None not in words else None


def assigned(node: Any) -> list[str] | None:
    """The value a plain assignment ``NAME=VALUE`` gives, when the line shows it."""
    value = node.child_by_field_name("value")
    if value is None:
        return [""]
    text = value.text.decode("utf-8", "replace")
    if re.fullmatch(r"\$\(\s*mktemp(\s+-[dqt]+)*\s*\)", text):
        return ["/tmp/tmp.XXXXXXXXXX"]  # `tmp=$(mktemp)`: in the private temp folder
    found = literal(value)
    return [found] if found is not None else None
