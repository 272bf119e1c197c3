"""A write to a path the shell computes (``echo x > $f``, ``cp x "$PWD/config/a.yml"``,
``for f in config/*.yml; do … > "$f"; done``) meets the deny rules as a pattern: any path that
ends as the word's literal end does (``config/a.yml``), the computed part anything, ``..`` and
an absolute start included. Before, such a line was only "not understood", which yolo runs:
``D=config; cp x $D/a.yml`` wrote past a ``Write(config/**)`` deny rule there.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.made_names import Made


def guessed(tail: str) -> list[Made]:
    """Any path ending in ``tail`` (after its last ``../``), relative or absolute."""
    end = tail.rsplit("../", 1)[-1].lstrip("/") if ".." in tail else tail.lstrip("/")
    return [Made("", end, unlisted=True), Made("/", end, unlisted=True)]


def guessed_writes(named: Iterable[str], computed: dict[str, str]) -> list[Made]:
    """The patterns of the paths ``named`` that end a word the shell computes (its text as
    written -> its literal end): ``cp x $F``, ``dd of="$HOME/.bashrc"``."""
    return [m for w in named for word, tail in computed.items() if w and word.endswith(w)
            for m in guessed(tail)]  # fmt: skip
