"""How large a regular expression becomes once its counted repeats are written out. ``regex``
(which ``grep`` matches with, for its timeout) expands ``{n}`` when it compiles: the 36
characters ``(?:(?:(?:a{100}){100}){100}){100}`` took more than 4 GB, before any line was read.
A pattern is the model's, and text in a checkout can dictate one."""

from __future__ import annotations

import re

MAX_UNITS = 100_000  # atoms once repeats are expanded: about 25 MB to compile
_COUNT = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def expanded_size(pattern: str) -> int:
    """An upper bound of the atoms ``pattern`` holds with every ``{n}``, ``{n,m}`` written out
    (escapes and character classes count one each; alternatives add up)."""
    stack: list[list[int]] = [[]]
    i, end = 0, len(pattern)
    while i < end:
        char = pattern[i]
        if char == "\\":
            stack[-1].append(1)
            i += 2
        elif char == "[":
            i = _class_end(pattern, i + 1)
            stack[-1].append(1)
        elif char == "(":
            stack.append([])
            i += 1
        elif char == ")" and len(stack) > 1:
            stack[-1 - 1].append(max(sum(stack.pop()), 1))
            i += 1
        elif char == "{" and stack[-1] and (count := _COUNT.match(pattern, i)):
            low, high = count.group(1), count.group(2)
            times = int(high) if high else int(low or 0)
            stack[-1][-1] *= max(times, 1)
            i = count.end()
        else:
            stack[-1].append(1)
            i += 1
    return sum(sum(group) for group in stack)


def _class_end(pattern: str, i: int) -> int:
    """The index after the ``]`` closing a class that opened before ``i``."""
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1
