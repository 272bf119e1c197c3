"""Who may do what: permission modes, per-tool/path rules from settings, and hard limits.

Modes: ``ask`` (editors' default: reads free, edits and commands ask), ``auto-edit`` (edits free,
commands ask), ``ci`` (nobody to ask: workspace writes allowed, network and destructive commands
denied), ``yolo`` (everything allowed). Hard limits hold in every mode: paths stay inside the
workspace. Rules in ``.kiln/settings.json`` and ``$KILN_HOME/settings.json`` look like
``{"permissions": {"allow": ["run_command(pytest*)"], "ask": [], "deny": ["edit_file(secrets/**)"]}}``.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent.errors import ConfigError

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

NETWORK_COMMANDS = {
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp",
    "socat", "nmap", "ping", "dig", "nslookup", "http", "https", "aria2c",
}  # fmt: skip
DESTRUCTIVE_PATTERNS = [
    r"\brm\s+(-[a-zA-Z]*[rf][a-zA-Z]*\s+)+(/|~|\$HOME|\*|\.\.?)(\s|/?$)",
    r"\brm\s+-[a-zA-Z]*\s+/\S*",
    r"\bsudo\b",
    r"\bmkfs(\.\w+)?\b",
    r"\bdd\s+.*\bof=/dev/",
    r"\b(shutdown|reboot|halt|poweroff)\b",
    r"\bgit\s+push\b",
    r"\bgit\s+(reset\s+--hard|clean\s+-[a-z]*f)",
    r"\bchmod\s+-R\s+[0-7]{3,4}\s+/",
    r":\(\)\s*\{.*\};\s*:",  # fork bomb
    r">\s*/dev/sd[a-z]",
    r"~/\.ssh|\$HOME/\.ssh|/\.ssh/",
    r"\b(pip|npm|apt(-get)?|gem|cargo)\s+(install|add)\b",
]
SENSITIVE_FILES = (
    "KILN.md",
    "AGENTS.md",
    "CLAUDE.md",
    ".kiln/settings.json",
    ".kiln/mcp.json",
    ".git/config",
    ".git/hooks/",
)


@dataclass
class Check:
    verdict: Verdict
    reason: str = ""


@dataclass
class Rules:
    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)

    def extend(self, other: Rules) -> None:
        self.allow += other.allow
        self.ask += other.ask
        self.deny += other.deny


def load_rules(root: Path, home: Path) -> Rules:
    """Project rules first, then user rules; a malformed file is a clear error, never a grant."""
    rules = Rules()
    for path in (root / ".kiln" / "settings.json", home / "settings.json"):
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(
                f"cannot read {path}: {exc}", hint="fix or delete the settings file"
            ) from exc
        rules.extend(_parse_rules(path, data))
    return rules


def _parse_rules(path: Path, data: Any) -> Rules:
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path} must hold a JSON object", hint='e.g. {"permissions": {"allow": []}}'
        )
    perms = data.get("permissions", {})
    if not isinstance(perms, dict):
        raise ConfigError(f'{path}: "permissions" must be an object with allow/ask/deny lists')
    lists: dict[str, list[str]] = {}
    for key in ("allow", "ask", "deny"):
        value = perms.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(
                f"{path}: permissions.{key} must be a list of strings",
                hint='e.g. "allow": ["run_command(pytest*)", "edit_file(src/**)"]',
            )
        for rule in value:
            if not RULE_RE.fullmatch(rule.strip()):
                raise ConfigError(
                    f"{path}: permissions.{key}: {rule!r} is not a rule",
                    hint='a rule is TOOL or TOOL(pattern), e.g. "run_command(make *)"',
                )
        lists[key] = value
    return Rules(lists["allow"], lists["ask"], lists["deny"])


def _subject(tool: str, args: dict[str, Any]) -> str:
    if tool == "run_command":
        return str(args.get("command", ""))
    return str(args.get("path", args.get("name", "")))


RULE_RE = re.compile(r"([\w\-\*]+)(?:\((.*)\))?")


def _rule_matches(rule: str, tool: str, subject: str) -> bool:
    m = RULE_RE.fullmatch(rule.strip())
    if not m:
        return False
    name, pattern = m.group(1), m.group(2)
    if not fnmatch.fnmatchcase(tool, name):
        return False
    return pattern is None or fnmatch.fnmatchcase(subject, pattern)


def command_words(command: str) -> list[str]:
    """First word of each pipeline/sequence segment, so `a && curl x` is seen as using curl."""
    words = []
    for segment in re.split(r"&&|\|\||[;|&\n]|\$\(|`", command):
        try:
            parts = shlex.split(segment)
        except ValueError:
            parts = segment.split()
        while parts and re.fullmatch(r"\w+=.*", parts[0]):  # env assignments
            parts = parts[1:]
        if parts:
            words.append(Path(parts[0]).name)
    return words


def classify_command(command: str) -> str | None:
    """Why a command is dangerous ("network"/"destructive"), or None."""
    if any(w in NETWORK_COMMANDS for w in command_words(command)) or re.search(
        r"https?://", command
    ):
        return "network"
    for pattern in DESTRUCTIVE_PATTERNS:
        if re.search(pattern, command):
            return "destructive"
    return None


class Permissions:
    def __init__(self, mode: str = "ask", rules: Rules | None = None) -> None:
        if mode not in MODES:
            raise ConfigError(
                f"unknown permission mode {mode!r}", hint=f"use one of: {', '.join(MODES)}"
            )
        self.mode = mode
        self.rules = rules or Rules()
        self.session_allow: set[str] = set()  # "allow_always" answers, per tool+subject
        self.session_deny: set[str] = set()  # "reject_always" answers
        self.skill_allowed: set[str] = set()  # allowed-tools of the active skill

    def check(self, tool: str, args: dict[str, Any], *, from_external: bool = False) -> Check:
        subject = _subject(tool, args)
        for rule in self.rules.deny:
            if _rule_matches(rule, tool, subject):
                return Check("deny", f"denied by rule {rule}")
        danger = classify_command(subject) if tool == "run_command" else None
        sensitive = tool in EDIT_TOOLS and any(s in subject for s in SENSITIVE_FILES)
        if tool == "remember" and from_external and self.mode != "ci":
            return Check("ask", "memory proposed while acting on external content")
        if self.mode == "yolo":
            return Check("allow")
        if self.mode == "ci":
            if danger:
                return Check("deny", f"{danger} commands are not allowed in ci mode")
            if sensitive:
                return Check("deny", "memory and settings files are not edited in ci mode")
            return Check("allow")  # remember only records a proposal in the run report
        if from_external and (danger or sensitive or tool == "remember"):
            return Check("ask", "requested while acting on external content")
        if danger:
            return Check("ask", f"{danger} command")
        if sensitive:
            return Check("ask", "edits memory or settings")
        key = f"{tool}:{subject}"
        if key in self.session_deny or tool in self.session_deny:
            return Check("deny", "the user declined this for the session")
        if key in self.session_allow or tool in self.session_allow:
            return Check("allow")
        for rule in self.rules.ask:
            if _rule_matches(rule, tool, subject):
                return Check("ask", f"rule {rule}")
        for rule in self.rules.allow:
            if _rule_matches(rule, tool, subject):
                return Check("allow", f"allowed by rule {rule}")
        if tool in self.skill_allowed:
            return Check("allow", "allowed by the active skill")
        if tool in READ_TOOLS:
            return Check("allow")
        if tool in EDIT_TOOLS and self.mode == "auto-edit":
            return Check("allow")
        return Check("ask")

    def remember_answer(self, tool: str, args: dict[str, Any], decision: str) -> None:
        key = tool if tool in EDIT_TOOLS else f"{tool}:{_subject(tool, args)}"
        if decision == "allow_always":
            self.session_allow.add(key)
        elif decision == "reject_always":
            self.session_deny.add(key)
