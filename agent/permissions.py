"""Who may do what: permission modes, rules from settings, and the checks every tool call passes.

Modes: ``ask`` (editors' default: reads free, edits and commands ask), ``auto-edit`` (ordinary
workspace edits free, commands ask), ``ci`` (nobody to ask: ordinary workspace edits and
understood commands allowed; network, destructive, not-understood commands and edits of memory,
settings or files outside the workspace refused), ``yolo`` (everything allowed — commands still
run in the sandbox). Paths of file tools stay inside the workspace in every mode, and never
reach what git or an editor runs by itself (``runs_on_host``: ``.git``, the hooks folder,
``AUTORUN_FILES``).

Rules (vocabulary in ``agent.rules``) live in ``.kiln/settings.json`` and
``$KILN_HOME/settings.json``: ``{"permissions": {"allow": [...], "ask": [...], "deny": [...]}}``.
A command line is parsed (``agent.shell_parse``): a deny rule matching any simple command or any
written path refuses the line; an allow rule approves it only when EVERY simple command is allowed
and every write is allowed; a line the parser cannot understand is never approved by a rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent import command_risk, git_revision
from agent.errors import ConfigError
from agent.made_names import made_rule, made_targets
from agent.permission_rules import Rules
from agent.rules import READ_PATH_TOOLS, Kind, Rule, parse_rule, path_spellings
from agent.shell_parse import ParsedCommand, parse_command
from agent.write_policy import HOST_RUN_REFUSAL, WriteTarget, classify_writes, runs_on_host

MODES = ("ask", "auto-edit", "ci", "yolo")
Verdict = Literal["allow", "ask", "deny"]

READ_TOOLS = {
    "read_file",
    "list_files",
    "search_code",
    "grep",
    "todo_write",
    "skill",
    "tool_search",
    "task",
    "search_sessions",
}
EDIT_TOOLS = {"edit_file", "write_file"}
# Parts of a line that open no connection themselves: a network grant may cover them too.
NO_NETWORK = {
    "cd", "pwd", "echo", "printf", "true", "false", ":", "test", "[", "sleep", "export", "set",
    "unset", "exit", "mkdir", "ls", "touch",
}  # fmt: skip
MEMORY_FILE = "KILN.md"  # where remember writes (project memory), for the write rules


@dataclass
class Check:
    verdict: Verdict
    reason: str = ""
    network: bool = False  # the command may use the network (granted, see ``agent.sandbox``)
    external: bool = False  # an action injected text would want, after untrusted content
    parts: str = ""  # the parsed simple commands, for prompts


def classify_command(command: str) -> str | None:
    """Why a command line is risky ("network", "destructive", "secrets"), or None."""
    return command_risk.line_risk(parse_command(command))


_SUBJECT_KEYS = ("path", "file_path", "filename", "file")


def _write_path(tool: str, args: dict[str, Any], memory_file: str) -> str | None:
    """The path a non-command tool writes, if any: edits, memory, any tool given a path."""
    if tool == "remember":
        return memory_file
    if tool in READ_TOOLS:
        return None
    for key in _SUBJECT_KEYS:
        if isinstance(args.get(key), str):
            return str(args[key])
    return None


class Permissions:
    def __init__(self, mode: str = "ask", rules: Rules | None = None, root: Path | None = None):
        if mode not in MODES:
            raise ConfigError(
                f"unknown permission mode {mode!r}", hint=f"use one of: {', '.join(MODES)}"
            )
        self.mode = mode
        self.rules = rules or Rules()
        self.root = Path(root or Path.cwd()).resolve()
        self._allow, self._ask, self._deny = (
            self.rules.parsed(k) for k in ("allow", "ask", "deny")
        )
        self.session_allow: set[str] = set()  # "allow_always" answers: tools, or simple commands
        self.session_deny: set[str] = set()  # "reject_always" answers
        self.network_granted: set[str] = set()  # simple commands granted the network
        self.network_rules: list[Rule] = []  # command rules granted the network by settings
        self.network_all = False  # the user's settings give every command the network
        # The active skill's allowed-tools: they only NARROW (see ``narrowed``), except names the
        # user granted at install/review (``skill_granted``, read from the user's lockfile).
        self.skill_allowed: set[str] = set()
        self.skill_granted: set[str] = set()
        # Its command patterns (``Bash(git status:*)``): commands they match stay inside it.
        self.skill_commands: list[Rule] = []
        self.skill_granted_commands: list[Rule] = []  # those of them the user granted
        # installed skill folder -> user grants, read when a skill loads (an update since the
        # session started may have dropped them)
        self.skill_grants: Callable[[], dict[str, set[str]]] = dict
        # Where remember would write (the session sets the project's memory file), so a write
        # rule on AGENTS.md covers remember when AGENTS.md is the project memory.
        self.memory_file: Callable[[], str] = lambda: MEMORY_FILE
        # Folders git acts on besides ``.git`` (set by ``agent.sandbox.attach``, shared with the
        # workspace): writes there are refused in every mode, like ``.git`` itself.
        self.host_run: list[Path] = []

    def deny_reads(self, paths: list[Path]) -> None:
        """Refuse reads of these absolute paths as a read deny rule of the user's would
        (credential files the environment names; see ``agent.sandbox.policy``)."""
        self._deny += [parse_rule(f"read(//{str(p).lstrip('/')})") for p in paths]

    # -- the check ----------------------------------------------------------------------------

    def check(self, tool: str, args: dict[str, Any], *, from_external: bool = False) -> Check:
        if tool == "run_command":
            check = self._check_command(str(args.get("command", "")), from_external)
            if self._skill_command(str(args.get("command", ""))):
                return check  # inside the active skill's command patterns: not narrowed
        else:
            check = self._check_tool(tool, args, from_external)
        return self._narrowed(tool, check)

    def _skill_command(self, command: str) -> bool:
        """Every simple command of the line matches one of the active skill's command
        patterns (``Bash(git status:*)`` lets it run ``git status``, not ``git push``)."""
        if not self.skill_commands:
            return False
        parsed = parse_command(command)
        simple = [c.argv for c in parsed.commands if c.argv]
        return (
            parsed.understood
            and bool(simple)
            and all(any(r.matches_command(argv) for r in self.skill_commands) for argv in simple)
        )

    def _deny_rule(self, kind: Kind, subject: Any, *, shell: bool = False) -> Rule | None:
        if not self._deny:
            return None  # the common case: no path to resolve (grep asks once per file)
        spellings = path_spellings(subject, self.root, shell=shell) if kind != "command" else []
        for rule in self._deny:
            if kind == "command" and rule.matches_command_by_name(subject):
                return rule
            if any(rule.matches_path(kind, s, self.root, fold=True) for s in spellings):
                return rule
        return None

    def read_denied(self, path: str) -> bool:
        """Whether a read deny rule covers ``path``: search tools leave such files out."""
        return self._deny_rule("read", path) is not None

    def _path_rule(
        self, rule: Rule, kind: Kind, path: str, *, every: bool = False, shell: bool = False
    ) -> bool:
        """Whether ``rule`` covers ``path`` in any of its spellings (all of them: ``every``)."""
        spellings = path_spellings(path, self.root, shell=shell)
        # ask rules in any case (as deny rules); allow rules only as written
        hits = (rule.matches_path(kind, s, self.root, fold=not every) for s in spellings)
        return all(hits) if every else any(hits)

    def _check_tool(self, tool: str, args: dict[str, Any], from_external: bool) -> Check:
        subject = str(args.get("path", args.get("name", "")))
        for rule in self._deny:
            if rule.matches_tool(tool, subject):
                return Check("deny", f"denied by rule {rule.text}")
        if tool in READ_PATH_TOOLS and isinstance(args.get("path"), str):
            denied = self._deny_rule("read", args["path"])
            if denied is not None:
                return Check("deny", f"denied by rule {denied.text}")
        written = _write_path(tool, args, self.memory_file())
        target = classify_writes([written], self.root)[0] if written is not None else None
        if target is not None:
            denied = self._deny_rule("write", written)
            if denied is not None:
                return Check("deny", f"denied by rule {denied.text}")
            if tool != "remember" and written and runs_on_host(written, self.root, self.host_run):
                return Check("deny", HOST_RUN_REFUSAL.format(path=written))
        sensitive = target is not None and target.where in ("sensitive", "outside")
        risky = sensitive or tool == "remember"
        external = from_external and risky
        if self.mode == "yolo":
            return Check("allow", external=external)
        if self.mode == "ci":
            if target is not None and target.where == "outside":
                return Check("deny", "writes outside the workspace are not allowed in ci mode")
            if sensitive and tool != "remember":
                return Check(
                    "deny",
                    "memory, settings, CI pipeline and commit hook files are not edited in ci mode",
                )
            return Check("allow")  # remember only records a proposal in the run report
        if external:
            return Check("ask", "requested while acting on external content", external=True)
        if sensitive:
            return Check("ask", "edits memory, settings, a CI pipeline or a commit hook")
        if tool in self.session_deny:
            return Check("deny", "the user declined this for the session")
        # Ask rules before "always" answers: a yes for every write_file, given on one file, is
        # no yes for the file the user's rule says to ask about each time (as for commands).
        for rule in self._ask:
            if rule.matches_tool(tool, subject) or (
                written is not None and self._path_rule(rule, "write", written)
            ):
                return Check("ask", f"rule {rule.text}")
            if tool in READ_PATH_TOOLS and self._path_rule(rule, "read", subject):
                return Check("ask", f"rule {rule.text}")
        if tool in self.session_allow:
            return Check("allow")
        for rule in self._allow:
            if rule.matches_tool(tool, subject) or (
                written is not None and self._path_rule(rule, "write", written, every=True)
            ):
                return Check("allow", f"allowed by rule {rule.text}")
        if tool in self.skill_granted:
            return Check("allow", "granted to the active skill at install")
        if tool in READ_TOOLS:
            return Check("allow")
        if tool in EDIT_TOOLS and self.mode == "auto-edit":
            return Check("allow")
        return Check("ask")

    def _check_command(self, command: str, from_external: bool) -> Check:
        parsed = parse_command(command)
        parts = parsed.describe()
        for simple in parsed.commands:
            if simple.argv:
                rule = self._deny_rule("command", simple.argv)
                if rule is not None:
                    return Check("deny", f"denied by rule {rule.text} ({simple.text})", parts=parts)
        targets = classify_writes(parsed.written(self.root), self.root)
        # What a command's own arguments write (``cp x KILN.md``) meets the deny rules and the
        # memory/settings/outside line like a redirection; an ordinary workspace file among them
        # needs no write rule: the rule for the command (``Bash(cp *)``) names that write.
        by_args = classify_writes(parsed.argument_writes(self.root), self.root)
        by_args += made_targets(parsed.made_names(self.root), self.root)  # `split`'s PREFIXab…
        for target in [*targets, *by_args]:
            rule = self._deny_rule("write", target.given, shell=True)
            if (rule := rule or made_rule(self._deny, target, self.root)) is not None:
                return Check(
                    "deny", f"denied by rule {rule.text} (writes {target.given})", parts=parts
                )
        for rule in self._deny:
            if rule.kind == "tool" and rule.matches_tool("run_command", command):
                return Check("deny", f"denied by rule {rule.text}", parts=parts)
        risk = command_risk.line_risk(parsed, *git_revision.askers(self.root))
        unclear = [*parsed.opaque, *parsed.unread(self.root)]  # not understood, nor vouched for
        bad_writes = [t for t in [*targets, *by_args] if t.where in ("sensitive", "outside")]
        wants_network = risk == "network"
        granted = wants_network and self._network_granted(parsed)
        external = from_external and (
            wants_network or bool(bad_writes) or bool(unclear)
            or not self._approved_by_rules(parsed, targets)
        )  # fmt: skip
        if self.mode == "yolo":
            return Check("allow", network=granted, external=external, parts=parts)
        if self.mode == "ci":
            if unclear:
                return Check(
                    "deny", f"not understood ({unclear[0]}); ci mode refuses it", parts=parts
                )
            if risk and not granted:
                return Check("deny", command_risk.ci_refusal(risk, command), parts=parts)
            if bad_writes:
                return Check(
                    "deny", _write_reason(bad_writes[0]) + "; refused in ci mode", parts=parts
                )
            return Check("allow", network=granted, parts=parts)
        if command in self.session_deny:
            return Check("deny", "the user declined this for the session", parts=parts)
        if external:
            return Check(
                "ask",
                "requested while acting on external content",
                network=wants_network,
                external=True,
                parts=parts,
            )
        if risk and not granted:
            return Check("ask", f"{risk} command", network=wants_network, parts=parts)
        if bad_writes:
            return Check("ask", _write_reason(bad_writes[0]), parts=parts)
        if unclear:
            return Check("ask", f"not understood: {unclear[0]}", parts=parts)
        for simple in parsed.commands:
            for rule in self._ask:
                if simple.argv and rule.matches_command_by_name(simple.argv):
                    return Check("ask", f"rule {rule.text} ({simple.text})", parts=parts)
        if self._approved_by_rules(parsed, targets):
            return Check("allow", "allowed by rule", network=granted, parts=parts)
        return Check("ask", network=wants_network, parts=parts)

    def _approved_by_rules(self, parsed: ParsedCommand, targets: list[WriteTarget]) -> bool:
        """Every simple command allowed (rule or session answer), every write allowed."""
        if not parsed.understood or not parsed.commands:
            return False
        for simple in parsed.commands:
            if not simple.argv:
                continue
            if simple.text in self.session_allow or "run_command" in self.session_allow:
                continue
            if "run_command" in self.skill_granted or any(
                r.matches_command(simple.argv) for r in self.skill_granted_commands
            ):
                continue
            if not any(r.matches_command(simple.argv) for r in self._allow):
                return False
        for target in targets:
            if target.where in ("device", "scratch"):
                continue
            if target.where == "workspace" and self.mode in ("auto-edit", "yolo"):
                continue
            if not any(
                self._path_rule(r, "write", target.given, every=True, shell=True)
                for r in self._allow
            ):
                return False
        return True

    def _network_granted(self, parsed: ParsedCommand) -> bool:
        """The network goes to the whole line, so a grant covers a line only when every part is
        granted or cannot use it (``cd``, ``echo``): a rule for ``pip install *`` is no grant
        for the ``python3 upload.py`` after it."""
        risky = [c for c in parsed.commands if command_risk.command_risk(c) == "network"]
        if risky and self.network_all:
            return True
        if not risky or parsed.sockets or any(  # `echo < /dev/tcp/…` is bash's own connection
            c.argv and c not in risky and c.argv[0] not in NO_NETWORK  # `./echo` is no echo
            and c.text not in self.network_granted
            for c in parsed.commands
        ):  # fmt: skip
            return False
        return all(
            c.text in self.network_granted
            or any(r.matches_command(c.argv) for r in self.network_rules)
            for c in risky
        )

    def _narrowed(self, tool: str, check: Check) -> Check:
        """A third-party skill's allowed-tools only narrow: while it is active, a tool outside
        its list is never allowed without asking (refused in ci)."""
        if not self.skill_allowed or check.verdict != "allow" or self.mode == "yolo":
            return check
        if tool in self.skill_allowed or tool in READ_TOOLS or tool in self.skill_granted:
            return check
        if self.mode == "ci":
            return Check(
                "deny", f"{tool} is outside the active skill's allowed-tools", parts=check.parts
            )
        return Check("ask", f"{tool} is outside the active skill's allowed-tools",
                     network=check.network, external=check.external, parts=check.parts)  # fmt: skip

    # -- answers ------------------------------------------------------------------------------

    def remember_answer(
        self, tool: str, args: dict[str, Any], decision: str, check: Check | None = None
    ) -> None:
        """Record an "always" answer: edits per tool, commands per simple command."""
        if tool == "run_command":
            command = str(args.get("command", ""))
            parsed = parse_command(command)
            if decision == "allow_always" and parsed.understood:
                self.session_allow.update(c.text for c in parsed.commands if c.argv)
            elif decision == "reject_always":
                self.session_deny.add(command)
            if decision == "allow_always" and check is not None and check.network:
                # the user saw the whole line "with network access": every part of it
                self.network_granted.update(c.text for c in parsed.commands if c.argv)
            return
        if decision == "allow_always":
            self.session_allow.add(tool)
        elif decision == "reject_always":
            self.session_deny.add(tool)

    def grant_network(self, command: str) -> None:
        """Grant the network to the network-using parts of ``command`` (settings, answers)."""
        parsed = parse_command(command)
        self.network_granted.update(
            c.text for c in parsed.commands if command_risk.command_risk(c) == "network"
        )


def _write_reason(target: WriteTarget) -> str:
    if target.where == "outside":
        return f"writes outside the workspace ({target.given})"
    return f"writes memory, settings or repository config ({target.given})"  # CI and hooks too
