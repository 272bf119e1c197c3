"""Redirections as bash reads them where the bundled tree-sitter-bash grammar does not.

Three shapes the grammar gets wrong, each of which hid a write or a whole command from the
permission check before: ``N<>FILE`` (open read-write) is a syntax error to it, so yolo ran
``exec 3<>config/app.yml`` past a ``Write(config/**)`` deny rule; a descriptor ``0`` or
``{NAME}`` glued to the operator (``0<x``, ``{fd}>x``) is read as a word of the command, so
``cp a config/app.yml 0</dev/null`` was a copy to ``0``; and the words after a redirection
(``cp a 2>/dev/null config/app.yml``, ``sh 2>/dev/null -c 'rm -rf src'``) are put inside the
redirection node, out of the command's words. ``readwrite_source`` rewrites ``<>`` to a ``>``
the grammar reads (marking where), ``glued_descriptors`` finds the glued descriptors and
``trailing_words`` the words that belong to the command.
"""

from __future__ import annotations

import re
from typing import Any

REDIRECTS = ("file_redirect", "heredoc_redirect", "herestring_redirect")
# What a here-document redirection holds besides the commands that follow it on its line.
HEREDOC_PARTS = {"heredoc_start", "heredoc_body", "heredoc_end", "file_redirect",
                 "file_descriptor"}  # fmt: skip
# Nodes that are one word of a command (as the grammar names them in a command's children).
_WORDS = {"word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation",
          "simple_expansion", "expansion", "command_substitution", "process_substitution",
          "number", "arithmetic_expansion", "brace_expression"}  # fmt: skip
_GLUED = re.compile(r"[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\}")


def readwrite_source(data: bytes, root: Any) -> tuple[bytes, set[int]]:
    """``data`` with each ``<>`` operator (the two tokens the grammar fails on, side by side)
    spelled ``> `` (same length, so every offset stays), and where each one starts."""
    found: set[int] = set()
    tokens = [n for n in _nodes(root) if not n.is_named and n.type in ("<", ">")]
    ends = {n.end_byte for n in tokens if n.type == "<"}
    for n in tokens:
        if n.type == ">" and n.start_byte in ends:
            found.add(n.start_byte - 1)
    out = bytearray(data)
    for at in found:
        out[at : at + 2] = b"> "
    return bytes(out), found


def glued_descriptors(root: Any) -> dict[int, str]:
    """Where a redirection starts -> the descriptor written right before it that the grammar
    read as a word (``0`` in ``cat 0<x``, ``{fd}`` in ``exec {fd}>x``)."""
    starts = {
        n.start_byte for n in _nodes(root) if n.type in REDIRECTS and not n.text.startswith(b"&>")
    }  # `echo 3&>x`: bash passes `3` to echo
    return {
        n.end_byte: n.text.decode("utf-8", "replace")
        for n in _nodes(root)
        if n.type in ("number", "concatenation", "word")
        and n.end_byte in starts
        and n.parent is not None
        and n.parent.type in ("command", *REDIRECTS)
        and _GLUED.fullmatch(n.text.decode("utf-8", "replace"))
    }


def is_glued(node: Any, glued: dict[int, str]) -> bool:
    """Whether ``node`` is a descriptor glued to the redirection after it, not a word."""
    return glued.get(node.end_byte) == node.text.decode("utf-8", "replace")


def trailing_words(node: Any) -> list[Any]:
    """The command's words the grammar put inside redirection ``node``: those after a file
    redirection's target (``2>/dev/null config/app.yml``) and after a here-document's start
    (``cat <<EOF b``), up to the first operator of the rest of the line."""
    if node.type == "file_redirect":
        named = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
        return [c for c in named[1:] if c.type in _WORDS]
    if node.type == "heredoc_redirect":
        out = []
        after = False
        for c in node.children:
            if c.type == "heredoc_start":
                after = True
            elif after and c.type in _WORDS:
                out.append(c)
            elif after and c.type not in HEREDOC_PARTS:
                break
        return out
    return []


def heredoc_reasons(node: Any, child: Any) -> list[str]:
    """Why a here-document body ``child`` of redirection ``node`` is not read: backticks in an
    unquoted one, and ``$( )`` in a ``<<-`` one of tab-indented lines, which the grammar does
    not parse (bash runs both)."""
    if child.type != "heredoc_body":
        return []
    text = child.text.decode("utf-8", "replace")
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    quoted = start is not None and any(q in start.text.decode("utf-8", "replace") for q in "'\"\\")
    if quoted:
        return []
    if "`" in text:
        return ["a here-document runs a command in backticks"]
    if not child.named_children and re.search(r"\$[({\[]", text):
        return ["a here-document's expansions are not read"]
    return []


def _nodes(root: Any) -> list[Any]:
    out, todo = [], [root]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(node.children)
    return out
