"""A shell command line as the permission rules see it: the simple commands it would run.

Parsed with tree-sitter-bash (the grammar bundled in ``tree-sitter-language-pack``), so
``pytest && touch X``, ``pytest; touch X``, ``pytest $(touch X)``, pipes, subshells, backticks,
process substitution and function bodies all yield every command inside them. Wrappers that run
another command (``env``, ``sh -c``, ``xargs``, ``timeout``, ``find -exec``… : the table is in
``agent.shell_wrappers``) are unwrapped: the wrapped command is checked as well as the wrapper.
A redirection that writes (``>``, ``>>``, ``&>``, ``>|``), ``tee FILE`` and ``find -fprint FILE``
become writes to those paths, which the write policy checks (and a write to ``/dev/fd/N``, to
the file the line opens N on: ``agent.shell_descriptors``).

Anything the parser cannot vouch for makes the whole line ``opaque``: a syntax error, a command
name that is not a literal word (``$CMD``, ``$(echo rm)``), ``eval``/``source``, a here-document
fed to a shell, an ``sh -c`` whose script is not a literal. Opaque lines are never approved by an
allow rule; they ask (or are refused in ``ci``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from agent import shell_words
from agent.computed_writes import Values, Word, assigned, guessed_writes, loop_values, word_of
from agent.find_paths import execdir_writes, find_filled
from agent.shell_command import ParsedCommand, SimpleCommand, program_name
from agent.shell_descriptors import opened, resolve_descriptors
from agent.shell_eval import compound_coproc, computed_program, evaluated_names, evaluated_text
from agent.shell_programs import program_scripts
from agent.shell_redirects import (
    HEREDOC_PARTS,
    REDIRECTS,
    glued_descriptors,
    heredoc_reasons,
    is_glued,
    readwrite_source,
    trailing_words,
)
from agent.shell_wrappers import (
    SHELLS,
    WRAPPERS,
    cd_folder,
    env_reasons,
    find_commands,
    find_writes,
    folder_options,
    glob_name,
    runs_code,
    set_variables,
    shell_script,
    unwrap,
    wrapper_script,
    xargs_placeholder,
    xargs_words,
)
from agent.shell_writes import argument_writes
from agent.unpack_writes import command_unpack

__all__ = ["ParsedCommand", "SimpleCommand", "parse_command"]

# `alias x=rm` then `x …`, `hash -p /bin/rm ls` then `ls …`, `enable -f lib.so x`: a name runs another
# program from then on.
_EVALUATORS = {"eval", "source", ".", "trap", "alias", "hash", "enable", "fc"}  # fc: history
# Built-ins and words that only shape the line, never a command of their own.
_SKIP_NAMES = {"[[", "]]", "!", "{", "}"}


@functools.cache
def _parser() -> Any:
    from tree_sitter_language_pack import get_parser

    return get_parser("bash")


MAX_DEPTH = 8


def parse_command(source: str, _depth: int = 0) -> ParsedCommand:
    """The simple commands of ``source``, wrappers and ``sh -c`` scripts included."""
    result = ParsedCommand(source)
    if _depth > MAX_DEPTH:
        result.opaque.append("nested too deeply")
        return result
    tree = _parser().parse(source.encode("utf-8"))
    readwrite: set[int] = set()
    if tree.root_node.has_error:  # `exec 3<>F`: the grammar has no `<>`
        data, readwrite = readwrite_source(source.encode("utf-8"), tree.root_node)
        tree = _parser().parse(data) if readwrite else tree
    if tree.root_node.has_error:
        result.opaque.append("the shell grammar cannot parse it")
    walker = _Walker(result, _depth, readwrite, glued_descriptors(tree.root_node))
    walker.visit(tree.root_node, [])
    result.guessed += [m for word in walker.guesses for m in walker.values.guesses(word)]
    result.opaque.extend(evaluated_text(tree.root_node))  # `$((v))` runs a $( ) v holds
    if None in result.cd and any(c.writes or c.arg_writes or c.copies or c.unpacks
                                 for c in result.commands):  # fmt: skip
        result.opaque.append("it writes after changing to a folder the line computes")
    if "\\\n" in source:  # the shell joins `r\<newline>m` into `rm`; the grammar splits it
        joined = parse_command(source.replace("\\\n", ""), _depth + 1)
        result.commands += [c for c in joined.commands if c not in result.commands]
        result.opaque += [why for why in joined.opaque if why not in result.opaque]
        result.cd += joined.cd
        result.descriptors += joined.descriptors
        result.guessed += joined.guessed
    return resolve_descriptors(result) if _depth == 0 else result


class _Walker:
    def __init__(
        self, result: ParsedCommand, depth: int, readwrite: set[int], glued: dict[int, str]
    ) -> None:
        self.result = result
        self.depth = depth
        self.readwrite = readwrite  # where a `<>` operator starts (spelled `> ` for the grammar)
        self.glued = glued  # redirection start -> the `0` or `{fd}` before it (not a word)
        self.stdin: str | None = None  # the file an input redirection names, for the next command
        # Words the shell computes (``$X``, ``$'rm'``, ``"$(…)"``), as their text stands in argv.
        self.computed: dict[str, Word] = {}  # -> its variable and literal end
        self.values, self.guesses = Values(), list[Word]()  # computed paths written
        # And those that may still reach a program as an option: a pattern such as ``*`` (a
        # checkout's file named ``--checkpoint-action=exec=…``), for ``computed_program``.
        self.option_like: set[str] = set()

    def visit(self, node: Any, pending_writes: list[str]) -> None:
        kind = node.type
        if kind == "redirected_statement":
            writes: list[str] = []
            body = None
            extra: list[Any] = []  # `cp a 2>/dev/null config/x`: words the grammar put there
            for child in node.children:
                if child.type in REDIRECTS:
                    self._redirect(child, writes)
                    extra += trailing_words(child)
                elif body is None:
                    body = child
            if body is not None and body.type == "command":
                self._command([*body.children, *extra], writes)
            elif body is not None:
                if extra:
                    self.result.opaque.append("words follow the redirection of a compound command")
                self.visit(body, writes)
            elif extra:
                self._command(extra, writes)
            else:
                self._add(SimpleCommand((), tuple(writes)))
            for child in node.children:
                self._heredoc_rest(child)
            return
        if kind == "command":
            self._command(node.children, pending_writes)
            return
        if kind == "variable_assignment":  # `PATH=.:$PATH; ls`, `export GIT_PAGER=…`
            self._assignment(node, assigned(node))
        if kind == "function_definition":
            self.result.opaque.append("defines a shell function")
        if kind == "for_statement":  # `for PATH in .; do ls; done` sets PATH
            variable = node.child_by_field_name("variable")
            if variable is not None:  # to the words after `in`
                self._sets(variable.text.decode("utf-8", "replace"), loop_values(node))
        if kind == "regex":  # `[[ -n ${x#$(cmd)} ]]`: a pattern's text, as in a word
            self._substitutions(node)
        if kind in ("declaration_command", "unset_command", "test_command"):
            # `export X=$(cmd)`, `[[ -f $(cmd) ]]`: the words may hide substitutions.
            self._add(SimpleCommand((node.children[0].text.decode(),), tuple(pending_writes)))
            pending_writes = []
        for child in node.children:
            self.visit(child, pending_writes if kind in _PASS_WRITES else [])
        if pending_writes and kind not in _PASS_WRITES:
            self._add(SimpleCommand((), tuple(pending_writes)))

    def _heredoc_rest(self, node: Any) -> None:
        """`cat <<EOF | sh`, `cat <<EOF && rm x`: the grammar puts the rest of the line inside
        the here-document redirection; those commands run too."""
        if node.type == "heredoc_redirect":
            words = trailing_words(node)  # `cat <<EOF b`: words of the command
            for part in node.children:
                if part.is_named and part.type not in HEREDOC_PARTS and part not in words:
                    self.visit(part, [])

    def _redirect(self, node: Any, writes: list[str]) -> None:
        tokens = [c for c in node.children if not c.is_named]
        target = next(
            (c for c in node.children if c.is_named and c.type != "file_descriptor"), None
        )
        words = trailing_words(node)  # the command's words: ``_command`` reads them
        for child in node.children:
            if child.type == "file_redirect":
                self._redirect(child, writes)  # `cat <<EOF > f`: nested in the here-document
            elif child.type == "heredoc_body":  # backticks: never walked (quoted: not run)
                self.result.opaque.extend(heredoc_reasons(node, child))
                if b"`" not in child.text:
                    self._substitutions(child)
            elif (
                child.is_named
                and child not in words
                and (node.type != "heredoc_redirect" or child.type in HEREDOC_PARTS)
            ):  # the commands after a here-document's start: ``_heredoc_rest``
                self._substitutions(child)
        if node.type != "file_redirect" or target is None:
            return
        op = tokens[0].type if tokens else ""
        if tokens and tokens[0].start_byte in self.readwrite:
            op = "<>"  # read-write: a write like `>`
        glued = self.glued.get(node.start_byte)  # `0<x`, `{fd}>x`
        if glued is not None and glued.startswith("{"):
            self._sets(glued[1:-1])  # `{BASH_ENV}>x` sets BASH_ENV to the descriptor's number
        if target.type == "process_substitution":  # `> >(tee log)`: a pipe, its commands read
            return
        literal = shell_words.literal(target)  # several words: bash's "ambiguous redirect"
        fd = glued if glued is not None and not glued.startswith("{") else None
        self.result.descriptors += opened(node, op, literal, target.type, fd)  # `> /dev/fd/3`
        if op == "<" and literal is not None:
            self.stdin = literal  # `patch -p1 < fix.patch`: what the next command reads
        if op in ("<", "<>") and (
            literal is None or literal.startswith(("/dev/tcp/", "/dev/udp/"))
        ):
            self.result.sockets.append(target.text.decode("utf-8", "replace"))
        if op in (">", ">>", "&>", "&>>", ">|", "<>") or (
            op == ">&" and target.type != "number" and literal != "-"
        ):
            if literal is None:  # `> $f`: any path that ends as the word does
                self.result.opaque.append(f"writes to a computed path {target.text.decode()!r}")
                self.guesses.append(word_of(target))
            writes.append(literal or target.text.decode())

    def _command(self, children: list[Any], writes: list[str]) -> None:
        argv: list[str] = []
        for child in children:
            if is_glued(child, self.glued):  # `cat 0<x`: the descriptor, not a word
                continue
            if child.type == "variable_assignment":
                self._assignment(child)
                self._substitutions(child)
                continue
            if child.type in REDIRECTS:
                self._redirect(child, writes)
                self._heredoc_rest(child)
                continue
            if child.type == "command_name":
                name_node = child.children[0] if child.children else child
                found = shell_words.words(name_node)  # `r{m,}` is `rm r`
                if any(w.computed for w in found):
                    self.result.opaque.append(f"command name {child.text.decode()!r} is computed")
                    self._substitutions(child)
                self._take(found, argv)
                continue
            if child.is_named:
                self._substitutions(child)
                self._take(shell_words.words(child), argv)
        self._add_with_wrappers(tuple(argv), tuple(writes))

    def _take(self, found: list[shell_words.Word], argv: list[str]) -> None:
        for word in found:
            argv.append(word.text)
            if word.computed:
                self.computed[word.text] = (word.lead, word.tail)
            if word.option_like:
                self.option_like.add(word.text)

    def _assignment(self, node: Any, values: list[str] | None = None) -> None:
        name = node.child_by_field_name("name")
        self._sets(name.text.decode("utf-8", "replace") if name is not None else "", values)

    def _sets(self, variable: str, values: list[str] | None = None) -> None:
        self.values.set(variable, values)
        if runs_code(variable):
            self.result.opaque.append(f"sets {variable}, which changes what a command runs")

    def _add(self, command: SimpleCommand) -> None:
        self.result.commands.append(command)

    def _add_with_wrappers(self, argv: tuple[str, ...], writes: tuple[str, ...]) -> None:
        if not argv:
            if writes:
                self._add(SimpleCommand((), writes))
            return
        name = program_name(argv[0])
        if name in _SKIP_NAMES:
            argv = argv[1:]
            if not argv:
                return
            name = program_name(argv[0])
        for why in (
            compound_coproc(name, argv),  # `coproc NAME { rm -rf src; }`
            computed_program(name, argv, {*self.computed, *self.option_like}),  # `env $X …`
            evaluated_names(name, argv),  # `printf -v 'a[$(rm …)]' x`
        ):
            if why is not None:
                self.result.opaque.append(why)
        if glob_name(argv[0]):
            self.result.opaque.append(f"command name {argv[0]!r} is expanded by the shell")
        if name in ("cd", "pushd"):  # later writes of the line land there
            operands = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
            self.result.cd.append(cd_folder(operands[0] if operands else None))
        for value in folder_options(name, argv):  # env -C DIR cmd, git -C DIR …
            self.result.cd.append(cd_folder(value))
        for word in set_variables(name, argv):  # `read PATH < f`, `printf -v PATH %s .`
            self._sets(word)
        extra_writes = tuple(a for a in argv[1:] if a[:1] != "-") if name == "tee" else ()
        if name == "find":
            extra_writes = tuple(find_writes(argv[1:]))
        arg_writes, copies = argument_writes(argv)
        named = [*arg_writes, *(p for copy in copies for p in (copy.dest, *copy.sources))]
        if guessed := guessed_writes(named, self.computed):  # `cp x $F`: which file?
            if name not in ("rm", "unlink", "rmdir"):  # removals: ``command_risk`` labels them
                self.result.opaque.append(f"{name} writes to a path the shell computes")
            self.guesses += guessed
        stdin, self.stdin = self.stdin, None
        unpacked = command_unpack(argv)
        if unpacked is not None and unpacked.source is None and stdin is not None:
            unpacked = replace(unpacked, source=stdin)
        self._add(SimpleCommand(argv, writes + extra_writes, tuple(arg_writes), tuple(copies),
                                (unpacked,) if unpacked is not None else ()))  # fmt: skip
        if name in _EVALUATORS:  # still read what a literal `eval`/`trap` text runs, for deny rules
            self.result.opaque.append(f"{name} runs text the parser cannot see")
            if name in ("eval", "trap") and not any(w in self.computed for w in argv[1:]):
                self._script(" ".join(argv[1:]) if name == "eval" else argv[1] if argv[2:] else "")
            return
        scripts, unreadable = program_scripts(argv)  # `tar --checkpoint-action=exec=…`
        self.result.opaque.extend(unreadable)
        for line in scripts:
            self._script(line)
        if name in SHELLS:
            self._shell(argv)
            return
        if name == "find":  # -exec rm -rf {} ;  is rm
            before = len(self.result.commands)
            for inner_argv in find_commands(argv[1:]):
                self._placeholder(inner_argv, "{}", "find")
                for filled in find_filled(list(argv[1:]), inner_argv, self.computed):
                    self._add_with_wrappers(tuple(filled), ())  # `{}`: under find's start
            found = self.result.commands[before:]  # `-execdir`: run in each folder found
            self.result.guessed += execdir_writes(argv[1:], found, self.computed)
            return
        if name in WRAPPERS:
            script = wrapper_script(name, argv[1:])
            if script is not None:  # flock FILE -c '…', script -c '…'
                self._script(script)
                return
            inner = unwrap(name, argv[1:])
            if name == "env":  # `env -S "rm -rf src"`, `env PATH=. ls`
                self.result.opaque.extend(env_reasons(argv[1:], inner))
            if inner is None:
                return
            if name == "xargs":  # the arguments come from stdin: never a closed command
                self._placeholder(inner, xargs_placeholder(argv[1:]), "xargs")
                inner = xargs_words(inner, xargs_placeholder(argv[1:]))
            else:
                self.stdin = stdin  # `timeout 60 patch -p1 < fix.patch`
            self._add_with_wrappers(tuple(inner), ())

    def _placeholder(self, inner: list[str], mark: str | None, by: str) -> None:
        """`xargs -I{} sh -c '{}'`, `find -exec {} ;`: the input becomes the command itself."""
        if not mark or not inner:
            return
        script = shell_script(inner[1:])[1] if PurePosixPath(inner[0]).name in SHELLS else None
        if mark in inner[0] or (script is not None and mark in script):
            self.result.opaque.append(f"{by} puts its input into the command it runs")

    def _shell(self, argv: tuple[str, ...]) -> None:
        if any(a.startswith(("--rcfile", "--init-file")) for a in argv[1:]):
            # `bash --rcfile evil.sh -ic true`: an interactive shell runs that file first
            self.result.opaque.append(f"{argv[0]} runs a start-up file the line does not show")
        how, script = shell_script(argv[1:])
        if how == "script":
            if script is None:
                self.result.opaque.append(f"{argv[0]} -c without a script")
            else:
                self._script(script)
        elif how == "stdin":
            self.result.opaque.append(f"{argv[0]} reads its commands from stdin")
        # "file": `sh script.sh`, judged as the command `sh script.sh`

    def _script(self, script: str) -> None:
        inner = parse_command(script, self.depth + 1)
        self.result.commands.extend(inner.commands)
        self.result.opaque.extend(inner.opaque)
        self.result.descriptors.extend(inner.descriptors)
        self.result.guessed.extend(inner.guessed)

    def _substitutions(self, node: Any) -> None:
        """Commands inside $( ), backticks and <( ) anywhere in a word."""
        if node.type in ("command_substitution", "process_substitution"):
            if node.text.startswith(b"`") and b"\\`" in node.text:  # bash unescapes, then runs
                self.result.opaque.append("backticks nested in backticks run a command")
            for child in node.children:
                if child.is_named:
                    self.visit(child, [])
            return
        if node.type == "regex" and re.search(rb"\$[(\[]|`", node.text):  # `${x#$(…)}`, `${x^^`…`}`
            self.result.opaque.append("a pattern in ${…} runs a command the grammar does not read")
        for child in node.children:
            self._substitutions(child)


_PASS_WRITES = {"program", "list", "pipeline", "subshell", "compound_statement"}
