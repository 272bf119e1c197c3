"""What a line from the client must hold before anything parses or validates it further, besides
JSON-RPC's envelope (``envelope``): JSON (``lsp_server.json_text``: ``NaN``, ``Infinity`` and
``1e400`` are parse errors, a lone UTF-16 surrogate reads as U+FFFD) of at most ``MAX_VALUES``
values. The SDK copies every message for its observers and pydantic walks it: a 50 MB line of
``{}`` took gigabytes. The values are counted on the bytes, before anything is parsed.

A line that breaks a rule is ``Refused`` with the JSON-RPC code and a one-line reason, and names
whose it was (``Target``): a request (answered under its id), an answer to one of Kiln's own
requests (that request then fails at once instead of waiting for its timeout), or none known
(answered with ``id: null``). Its ids are read from its head, where clients put them
(``head_target``), else from the members of its outer object, found by one scan of the whole
line that skips strings and nested values (``scan_target``; a line over the size limit is not
kept, only its head); a parse error is answered with ``id: null``, as JSON-RPC answers one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from lsp_server import json_text

MAX_VALUES = 100_000
HEAD = 4096  # bytes of a line read for its ids
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
_TITLES = {PARSE_ERROR: "Parse error", INVALID_REQUEST: "Invalid request"}


@dataclass(frozen=True)
class Target:
    """Whose a refused line was: ``request`` is the id to answer under (None: ``id: null``),
    ``answer`` the id of Kiln's own request it answers (it is then not answered itself)."""

    request: Any = None
    answer: Any = None


class Refused(Exception):
    """A line that is no readable message: ``code`` and a one-line ``detail`` for ``target``."""

    def __init__(self, code: int, detail: str, target: Target) -> None:
        super().__init__(detail)
        self.code, self.detail, self.target = code, detail, target

    def error(self) -> dict[str, Any]:
        title = _TITLES.get(self.code, "Invalid request")
        return {"code": self.code, "message": title, "data": {"details": self.detail}}


def read(line: bytes) -> tuple[Any, bool]:
    """(the JSON value a line holds, whether a lone surrogate in it was read as U+FFFD);
    ``Refused`` if it holds none, or more than ``MAX_VALUES`` values."""
    if (values := count_values(line)) > MAX_VALUES:
        detail = f"a message may hold at most {MAX_VALUES:,} JSON values; this one holds {values:,}"
        raise Refused(INVALID_REQUEST, detail, line_target(line))
    try:
        return json_text.loads(line)
    except ValueError as exc:  # not JSON, not UTF-8, NaN, 1e400, an integer of 4,301 digits
        raise Refused(PARSE_ERROR, _line(str(exc)), _unparsed(line)) from None
    except RecursionError:  # [[[[…]]]] deeper than the parser's stack
        raise Refused(PARSE_ERROR, "JSON nested too deeply", _unparsed(line)) from None


def _unparsed(line: bytes) -> Target:
    """A parse error is answered with ``id: null``; an answer to Kiln fails its request."""
    answer = line_target(line).answer
    return Target(answer=answer) if answer is not None else Target()


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 300 else flat[:299] + "…"


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_EMPTY = re.compile(rb"\[\s*\]|\{\s*\}")


def count_values(line: bytes) -> int:
    """How many JSON values the line holds (objects, arrays and scalars; keys are not values):
    every value but the first follows a ``[``, ``{`` or ``,`` outside a string, except that
    an empty ``[]``/``{}`` holds none. Exact for JSON; a bound for the rest."""
    bound = 1 + line.count(b",") + line.count(b"[") + line.count(b"{")
    if bound <= MAX_VALUES:
        return bound
    bare = _EMPTY.sub(b"", _STRING.sub(b"0", line))
    return 1 + bare.count(b",") + bare.count(b"[") + bare.count(b"{")


# The leading members of a message whose values are plain: a request's id and method come
# before its params in what clients send ({"jsonrpc": "2.0", "id": 5, "method": ..., "params": ...),
# an answer's id before its result or error.
_MEMBER = re.compile(rb'\s*"(jsonrpc|id|method)"\s*:\s*(-?\d+|"[^"\\]*")\s*,')
_BODY = re.compile(rb'\s*"(result|error)"\s*:')


def head_target(line: bytes) -> Target:
    """Whose a line is, read from its head: a request when its id and method lead it, an answer
    when its id leads it and a ``result`` or ``error`` follows; else none known (members in
    another order are not guessed)."""
    head = line[:HEAD]
    opening = head.find(b"{")
    if opening < 0 or head[:opening].strip():
        return Target()
    members: dict[bytes, bytes] = {}
    at = opening + 1
    while (member := _MEMBER.match(head, at)) is not None:
        members[member.group(1)] = member.group(2)
        at = member.end()
    if b"id" not in members:
        return Target()
    try:
        msg_id = json.loads(members[b"id"])
    except ValueError:
        return Target()
    if b"method" in members:
        return Target(request=msg_id)
    if _BODY.match(head, at) is not None:
        return Target(answer=msg_id)
    return Target()


def line_target(line: bytes) -> Target:
    """Whose a whole line is: read from its head, else from a scan of the line."""
    target = head_target(line)
    return target if target != Target() else scan_target(line)


MAX_TOKENS = 1_000_000  # strings, brackets and separators a scan steps through, at most
_OUTER = re.compile(rb'["{}\[\],:]')  # what matters among the outer object's members
_INNER = re.compile(rb'["{}\[\]]')  # what matters inside a member's value: its end
_SCALAR = re.compile(rb'\s*(-?\d+|"[^"\\]*(?:\\.[^"\\]*)*"|null)\s*[,}]')


def scan_target(line: bytes) -> Target:
    """Whose a line is, from the members of its outer object wherever they stand (an answer's
    ``id`` after a large ``result``): one pass that steps over strings whole and counts
    brackets, so a nested ``"id"`` or one inside a string is not taken; it gives up after
    ``MAX_TOKENS`` steps, at an unterminated string, or when the line is no object."""
    at = len(line) - len(line.lstrip())
    if line[at : at + 1] != b"{":
        return Target()
    depth, at, key, want_key = 1, at + 1, b"", True
    members: dict[bytes, bytes] = {}
    for _ in range(MAX_TOKENS):
        if (found := (_OUTER if depth == 1 else _INNER).search(line, at)) is None:
            return Target()
        mark, at = found.group(), found.end()
        if mark == b'"':
            string = _STRING.match(line, found.start())
            if string is None:
                return Target()
            if depth == 1 and want_key:
                key, want_key = string.group(), False
            at = string.end()
        elif mark == b":":
            if key in (b'"id"', b'"method"', b'"result"', b'"error"'):
                scalar = _SCALAR.match(line, at)
                members[key] = scalar.group(1) if scalar is not None else b"{"
        elif mark == b",":
            want_key = True
        elif mark in b"{[":
            depth += 1
        elif (depth := depth - 1) == 0:  # the outer object ends
            break
    return _whose(members)


def _whose(members: dict[bytes, bytes]) -> Target:
    """A request when it has an id and a method, an answer when it has an id and a result or
    an error; the id must be an integer, a string or null."""
    raw = members.get(b'"id"')
    if raw is None or raw == b"{":
        return Target()
    try:
        msg_id = json.loads(raw)
    except ValueError:
        return Target()
    if b'"method"' in members:
        return Target(request=msg_id)
    if b'"result"' in members or b'"error"' in members:
        return Target(answer=msg_id)
    return Target()
