"""Permission rules from settings files: the user's grant, the repository's only restrict.

``.kiln/settings.json`` (the repository's) and ``$KILN_HOME/settings.json`` (the user's) hold
``{"permissions": {"allow": [...], "ask": [...], "deny": [...]}}``; each rule is checked here
when the file is read (``agent.rules`` has the vocabulary), so a malformed file is one clear
error, never a grant. ``agent.permissions`` applies them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.errors import ConfigError
from agent.rules import Rule, parse_rule
from skills_registry import config_file

# Each rule is tried on every path a tool touches or lists, and each deny rule walks the tree
# once per session: a repository's settings file (up to 1 MB: 40,000 rules) is held to this many
# per list. Its rules only restrict, so the ones left out only mean less restriction it asked for.
MAX_PROJECT_RULES = 1_000


@dataclass
class Rules:
    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # project rules ignored, for the status
    # How many of ``deny`` came from the repository (they come first): the sandbox walks the
    # file system for each, and gives the repository's a shared bound (``agent.sandbox.attach``).
    project_deny: int = 0

    def extend(self, other: Rules) -> None:
        self.allow += other.allow
        self.ask += other.ask
        self.deny += other.deny

    def parsed(self, key: str) -> list[Rule]:
        return [parse_rule(r) for r in getattr(self, key)]


def load_rules(root: Path, home: Path) -> Rules:
    """Project rules first, then user rules; a malformed file is a clear error, never a grant.
    The repository only restricts: its ``allow`` rules are ignored (a checkout that ships
    ``"allow": ["Bash(*)"]`` would otherwise run every command of an ``ask`` session unasked)."""
    rules = Rules()
    project = root / ".kiln" / "settings.json"
    for path in (project, home / "settings.json"):
        data = read_settings(path)
        if data is None:
            continue
        parsed = _parse_rules(path, data)
        name = ".kiln/settings.json" if path is project else "$KILN_HOME/settings.json"
        rules.warnings += _unread_keys(name, data)
        if path is project and parsed.allow:
            shown = ", ".join(parsed.allow).encode("unicode_escape").decode("ascii")
            rules.warnings.append(
                ".kiln/settings.json: permissions.allow ignored (only $KILN_HOME/settings.json "
                f"grants): {shown}"
            )
            parsed.allow = []
        if path is project:
            for key in ("ask", "deny"):
                kept = getattr(parsed, key)
                if len(kept) > MAX_PROJECT_RULES:
                    rules.warnings.append(
                        f".kiln/settings.json: permissions.{key}: only the first "
                        f"{MAX_PROJECT_RULES} of {len(kept)} rules apply"
                    )
                    setattr(parsed, key, kept[:MAX_PROJECT_RULES])
            rules.project_deny = len(parsed.deny)
        rules.extend(parsed)
    return rules


def read_settings(path: Path) -> dict[str, Any] | None:
    try:
        data = config_file.load_json(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:  # a file where KILN_HOME or .kiln belongs
        raise ConfigError(
            f"cannot read {path}: {config_file.unreadable(path, exc)}", hint=""
        ) from exc
    except (OSError, ValueError) as exc:  # a FIFO, a link to /dev/zero, bad or deep JSON
        reason = config_file.unreadable(path, exc) if isinstance(exc, OSError) else exc
        raise ConfigError(
            f"cannot read {path}: {reason}", hint="fix or delete the settings file"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path} must hold a JSON object", hint='e.g. {"permissions": {"allow": []}}'
        )
    return data


def _unread_keys(name: str, data: dict[str, Any]) -> list[str]:
    """A line per key of ``permissions`` other than allow, ask and deny: a misspelled
    ``"deny"`` held rules the user believed in, and nothing said they did not apply."""
    perms = data.get("permissions")
    if not isinstance(perms, dict):
        return []
    return [
        f"{name}: permissions.{str(key).encode('unicode_escape').decode('ascii')} is not read "
        "(only allow, ask and deny are): its rules do not apply"
        for key in perms
        if key not in ("allow", "ask", "deny")
    ]


def _parse_rules(path: Path, data: dict[str, Any]) -> Rules:
    perms = data.get("permissions", {})
    if not isinstance(perms, dict):
        raise ConfigError(f'{path}: "permissions" must be an object with allow/ask/deny lists')
    lists: dict[str, list[str]] = {}
    for key in ("allow", "ask", "deny"):
        value = perms.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(
                f"{path}: permissions.{key} must be a list of strings",
                hint='e.g. "allow": ["run_command(pytest*)", "Edit(src/**)"]',
            )
        for rule in value:
            try:
                parse_rule(rule)
            except ValueError as exc:
                raise ConfigError(
                    f"{path}: permissions.{key}: {rule!r} is not a rule: {exc}",
                    hint='a rule is TOOL or TOOL(pattern), e.g. "Bash(make *)", "Edit(src/**)"',
                ) from None
        lists[key] = value
    return Rules(lists["allow"], lists["ask"], lists["deny"])
