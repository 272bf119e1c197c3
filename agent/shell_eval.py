"""Text bash evaluates at run time as arithmetic or as a variable name, where a ``$( )`` the line
never shows still runs: bash expands an array subscript when it evaluates one, so with
``v='a[$(rm -rf src)]'`` each of ``$((v))``, ``[[ $v -eq 1 ]]``, ``${!v}``, ``${b[v]}``,
``let``, ``declare -i``, ``printf -v``, ``read`` and ``test -v`` runs ``rm``; and so do a
prompt expansion of it (``${v@P}``) and ``mapfile -C`` with it as the callback. The check cannot
follow a value from where the line (or a file) sets it to where bash evaluates it, so such a
spot is not understood unless it holds only numbers, operators and the shell's numeric
parameters (``$?``, ``$#``, ``${#name}``).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from agent.shell_programs import GIT_RUNNERS, OPTION_RUNNERS
from agent.shell_wrappers import (
    WRAPPERS,
    find_commands,
    git_subcommand_form,
    unwrap,
)

# Arithmetic operators of ``[[ … ]]`` (``test``'s and ``[``'s compare numbers without evaluating).
_ARITH_TESTS = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}
# Always numbers: the status, counts, pids, positional references by number, lengths.
_NUMERIC = re.compile(r"\$[?#$!0-9]|\$\{#\w*(\[[@*]\])?\}")
# A name (a variable bash looks up and evaluates in turn), an expansion or a substitution; not
# the letters of ``0x1f`` or ``16#ff``.
_NAME = re.compile(r"(?<![0-9#\w])[A-Za-z_]|[$`]")
# ``${!prefix*}``, ``${!prefix@}``, ``${!array[@]}``: names and keys, nothing evaluated.
_LISTING = re.compile(r"\$\{!\w+(\[[@*]\]|[@*])\}")
# A builtin's variable name that is no plain name (``a[$(…)]``, ``$v``): bash evaluates it.
_NOT_A_NAME = re.compile(r"[$`]|\[(?!\d*\])")
NAME_TAKERS = {"read", "mapfile", "readarray", "getopts", "wait"}
# bash's variables whose every assignment is arithmetic (``RANDOM=$v`` evaluates ``$v``).
_INTEGER_VARIABLES = {"RANDOM", "SRANDOM", "OPTIND", "HISTCMD"}


def _reason(what: str) -> str:
    return f"bash evaluates {what} at run time (a $( ) in an array subscript would run)"


def _evaluates_names(text: str) -> bool:
    return bool(_NAME.search(_NUMERIC.sub("0", text)))


def evaluated_text(root: Any) -> list[str]:
    """Why the parsed line is not understood: each spot where bash evaluates text it cannot see."""
    reasons: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        why = _spot(node)
        if why is not None and why not in reasons:
            reasons.append(why)
    return reasons


def _spot(node: Any) -> str | None:
    kind = node.type
    text = node.text.decode("utf-8", "replace")
    if kind == "arithmetic_expansion" and _evaluates_names(text.strip("$()[]")):
        return _reason(f"the arithmetic {text!r}")
    if kind == "c_style_for_statement":
        header = text[: text.find("))") + 2] if "))" in text else text
        if _evaluates_names(header.removeprefix("for").strip(" ()")):
            return _reason(f"the arithmetic of {header!r}")
    if kind == "binary_expression" and any(
        c.type == "test_operator" and c.text.decode() in _ARITH_TESTS for c in node.children
    ):
        operands = [c for c in node.children if c.type != "test_operator"]
        if any(_evaluates_names(c.text.decode("utf-8", "replace")) for c in operands):
            return _reason(f"the comparison {text!r}")
    if kind == "unary_expression" and any(
        c.type == "test_operator" and c.text.decode() == "-v" for c in node.children
    ):
        return _reason(f"the name in {text!r}")
    if kind == "expansion":
        return _expansion(node, text)
    if kind == "subscript":
        index = text[text.find("[") + 1 : text.rfind("]")]
        if index not in ("@", "*") and _evaluates_names(index):
            return _reason(f"the subscript {text!r}")
    if kind == "declaration_command":
        return _declaration(node, text)
    # `${x:-`rm …`}`: the grammar reads the backticks as a plain word
    if (
        kind == "word"
        and "`" in text
        and node.parent is not None
        and node.parent.type == "expansion"
    ):
        return f"{text!r} in {node.parent.text.decode('utf-8', 'replace')!r} runs a command"
    if kind == "array":  # `b=([v]=1)`: an indexed array's keys are arithmetic
        for element in node.children:
            key = element.text.decode("utf-8", "replace")
            if key.startswith("[") and "]=" in key and _evaluates_names(key[1 : key.find("]=")]):
                return _reason(f"the key of {key!r}")
    if kind == "variable_assignment":
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if (
            name is not None
            and name.text.decode() in _INTEGER_VARIABLES
            and value is not None
            and _evaluates_names(value.text.decode("utf-8", "replace"))
        ):
            return _reason(f"the value of {text!r}")
    return None


def _expansion(node: Any, text: str) -> str | None:
    if text.endswith("@P}"):  # prompt expansion runs the $( ) the value holds
        return f"bash expands {text!r} as a prompt, running the commands its value holds"
    kinds = [c.type for c in node.children]
    if len(kinds) > 1 and kinds[1] == "!" and not _LISTING.fullmatch(text):
        return _reason(f"the name {text!r} holds")
    if ":" in kinds:  # ${x:offset:length}
        rest = "".join(c.text.decode("utf-8", "replace") for c in node.children[kinds.index(":") :])
        if _evaluates_names(rest.strip(":}")):
            return _reason(f"the offset in {text!r}")
    return None


def _declaration(node: Any, text: str) -> str | None:
    """``declare -i n`` (every later assignment is arithmetic), ``typeset -n r=$v`` (a name
    reference), ``declare "$v=1"`` (a computed name)."""
    for child in node.children[1:]:
        word = child.text.decode("utf-8", "replace")
        if child.type == "word" and word.startswith("-") and ("i" in word or "n" in word):
            return _reason(f"the values {text!r} declares")
        if child.type not in ("word", "variable_name", "variable_assignment"):
            return _reason(f"the names {text!r} declares")
    return None


def evaluated_names(name: str, argv: tuple[str, ...]) -> str | None:
    """``let EXPR``, ``read NAME``, ``printf -v NAME``, ``test -v NAME``: the builtins that
    evaluate a word as arithmetic or as a variable name."""
    if name == "let":
        return _reason(f"the arithmetic of {' '.join(argv)!r}")
    if name in ("mapfile", "readarray") and any(a.startswith("-") and "C" in a for a in argv):
        return f"{name} -C runs its callback text, which the parser cannot see"
    if name == "compgen" and any(a.startswith("-") and set(a) & set("CFW") for a in argv):
        return "compgen -C, -F and -W run text the parser cannot see"
    if name in NAME_TAKERS:
        names = [a for a in argv[1:] if not a.startswith("-")]
    elif name in ("printf", "test", "["):
        names = [b for a, b in zip(argv[1:], argv[2:], strict=False) if a == "-v"]
    else:
        return None
    if any(_NOT_A_NAME.search(n) for n in names):
        return _reason(f"the names in {' '.join(argv)!r}")
    return None


def computed_program(name: str, argv: tuple[str, ...], computed: set[str]) -> str | None:
    """A word the shell computes where the check reads what runs: the command a wrapper,
    ``find -exec`` or ``xargs`` starts (``env $X -rf src``), any word of a program that runs a
    command named in its options (tar: ``"$A"`` may be ``--to-command=…``, and so may the ``*``
    of ``tar -cf x.tar *`` once a checkout ships a file of that name; sed, whose script ``$B``
    may end, rg, sort, zip), git's global options and subcommand, and any word of a git
    subcommand that runs a command line from its options (``git rebase "$X"``, ``git grep``)."""
    if not computed.intersection(argv[1:]):
        return None
    inner: list[list[str]] = []
    if name in WRAPPERS:
        inner = [unwrap(name, argv[1:]) or []]
    elif name == "find":
        inner = find_commands(argv[1:])
    if any(words and words[0] in computed for words in inner):
        return f"{name} runs a command whose name the shell computes"
    options = argv[1 : argv.index("--")] if "--" in argv else argv[1:]  # none after `--`
    if name in OPTION_RUNNERS and computed.intersection(options):
        return f"{name} takes a word the shell computes (it could name a program to run)"
    if PurePosixPath(name).name == "git":
        form = git_subcommand_form(argv) or argv
        head = argv[: len(argv) - len(form) + 2]  # git, its global options, the subcommand
        if computed.intersection(head[1:]) or (
            form[1:2] and form[1] in GIT_RUNNERS and computed.intersection(form)
        ):
            return "git takes an option or subcommand the shell computes"
    return None


# Words that open a compound command: tree-sitter-bash reads ``coproc NAME { rm …; }`` and
# ``coproc (rm …)`` as a simple command named ``NAME`` or ``(rm …)``; bash runs ``rm``.
_COMPOUND_STARTS = {"{", "[[", "!", "while", "until", "for", "if", "case", "select", "function",
                    "time", "coproc"}  # fmt: skip


def compound_coproc(name: str, argv: tuple[str, ...]) -> str | None:
    if name == "coproc" and any(w in _COMPOUND_STARTS or w.startswith("(") for w in argv[1:3]):
        return "coproc runs a compound command the grammar does not read"
    return None
