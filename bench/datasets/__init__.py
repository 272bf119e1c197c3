"""Dataset builders for the retrieval benchmark: each yields a corpus on disk plus queries.

Builders only produce data (under ``bench/data/`` or a temp dir, never committed); the scoring
lives in ``bench/retrieval.py`` so every method is measured the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class DatasetError(Exception):
    """A dataset could not be built from what the user pointed us at (bad repo, no commits...)."""

    hint: str = ""
    retryable: bool = False
    exit_code: int = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


@dataclass(frozen=True)
class Target:
    """One relevant definition: its file and the line span of the whole definition.

    ``line`` is the ``def``/``class`` line; ``start``..``end`` also covers decorators and body,
    so a block-level hit must contain ``line`` and stay within ``start``..``end``.
    """

    path: str
    line: int
    start: int
    end: int


@dataclass(frozen=True)
class Hit:
    """One ranked result as every method reports it (whole-file methods use line 1..1)."""

    path: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    files: frozenset[str]
    targets: tuple[Target, ...] = field(default=())
    # For history-mined sets: the commit whose tree the query must be run against.
    snapshot: str = ""
