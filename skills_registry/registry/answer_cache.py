"""The search stores' answer cache: recent answers by request while the database is unchanged.

Anyone can send a search, so the cache's keys are the sender's to choose: its size is bounded
both in answers and in the skill rows they hold (a row carries a description of up to 1,024
characters), and the least recently used answer goes first, so a stream of made-up queries
costs at most the bound and popular queries stay cached between its sweeps. Keys hold the
request as the store reads it (the limit already clamped), so two spellings of one request
share one answer.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

Answer = tuple[list[dict[str, Any]], str | None]  # a page of skills, the next cursor

MAX_ANSWERS = 512
MAX_ROWS = 10_000  # at most ~15 MB of rows, whatever the queries
MAX_PAGE = 100  # a search page holds 1 to 100 skills; a limit outside that is the nearest bound


def page_size(limit: int) -> int:
    """``limit`` clamped to a search page's range, as the answer and its cache key read it."""
    return max(1, min(int(limit), MAX_PAGE))


class AnswerCache:
    """Answers valid for one ``marker`` (a database version); another marker empties it."""

    def __init__(self, answers: int = MAX_ANSWERS, rows: int = MAX_ROWS) -> None:
        self.max_answers, self.max_rows = answers, rows
        self.marker: Any = None
        self._answers: OrderedDict[tuple[Any, ...], Answer] = OrderedDict()
        self.rows = 0  # skill rows held by every answer together

    def __len__(self) -> int:
        return len(self._answers)

    def valid_for(self, marker: Any) -> None:
        """Drop every answer unless they were read at ``marker``."""
        if marker != self.marker:
            self.marker, self._answers, self.rows = marker, OrderedDict(), 0

    def get(self, key: tuple[Any, ...]) -> Answer | None:
        answer = self._answers.get(key)
        if answer is not None:
            self._answers.move_to_end(key)
        return answer

    def put(self, key: tuple[Any, ...], answer: Answer) -> None:
        if key in self._answers:
            self.rows -= len(self._answers.pop(key)[0])
        if len(answer[0]) > self.max_rows:
            return
        self._answers[key] = answer
        self.rows += len(answer[0])
        while len(self._answers) > self.max_answers or self.rows > self.max_rows:
            _, dropped = self._answers.popitem(last=False)
            self.rows -= len(dropped[0])
