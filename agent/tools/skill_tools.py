"""The two tools that open the skills library to the model: ``skill`` and ``tool_search``.

Progressive disclosure: the catalog of skill names and descriptions rides at the tail of the
context (``SkillsContext.tail_block``, re-sent only when its fingerprint changes); ``skill``
returns one body on demand; bundled files are read later. Deferred tool schemas (skill sidecars
and MCP servers) never enter the prefix: ``tool_search`` ranks them and asks the session to
announce the matches, which makes them callable through the usual permission and output-budget
path. MCP servers (``agent.tools.mcp_servers``) start on the first search, so a session that
never needs them never pays, except those the host passed for the session, started up front.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent.errors import PathOutsideWorkspace, ToolError
from agent.events import StatusNote
from agent.injection import external
from agent.permissions import Permissions
from agent.protocols import SessionView, Tool, ToolContext
from agent.rules import Rule, parse_rule
from agent.status import one_line
from agent.tools.base import check_arguments, schema
from agent.tools.deferred_tools import CallTool, render_found
from agent.tools.mcp_servers import McpServers
from agent.types import ToolSpec
from agent.workspace import read_regular
from kiln_errors.shown import cut, shown
from skills_registry.deferred import ToolCatalog, api_safe
from skills_registry.discovery import SkillCatalog, discover_skills
from skills_registry.errors import SkillsError
from skills_registry.mcp_config import McpServerConfig
from skills_registry.skill import Skill
from skills_registry.tool_search import TOOL_SEARCH_MANUAL

log = logging.getLogger("kiln.skills")

SEARCH_RESULTS = 5
# allowed-tools entries written for Claude-style agents, mapped to Kiln's built-ins. Only bare
# names map: "Bash(git:*)" must not become "run_command" (that would allow every command).
CLAUDE_TOOL_NAMES = {
    "read": "read_file",
    "write": "write_file",
    "edit": "edit_file",
    "multiedit": "edit_file",
    "bash": "run_command",
    "grep": "grep",
    "glob": "list_files",
    "ls": "list_files",
    "todowrite": "todo_write",
}

SKILL_MANUAL = (
    "Load a skill: packaged instructions for a kind of task, listed by name and description in "
    "the <skills> block of the context. Call it before starting a task that matches a skill's "
    "description, then follow the instructions it returns. The answer lists the skill's bundled "
    "files (references/, scripts/, assets/); read one only when the instructions point to it, "
    "passing `file` when the skill lives outside the workspace. Do not call it for skills that "
    "are not listed, and do not load the same skill twice in a task.\n"
    'Example: {"name": "pdf-processing"} then {"name": "pdf-processing", "file": "references/forms.md"}'
)


def kiln_tool_names(allowed_tools: list[str]) -> set[str]:
    """The entries as given plus their Kiln built-in names where the mapping is exact."""
    names = set(allowed_tools)
    for entry in allowed_tools:
        mapped = CLAUDE_TOOL_NAMES.get(entry.lower())
        if mapped and "(" not in entry:
            names.add(mapped)
    return names


def command_patterns(allowed_tools: list[str]) -> list[Rule]:
    """The entries that name commands by pattern (``Bash(git status:*)``, ``run_command(make
    *)``): while the skill is active, commands they match are inside its list."""
    rules = []
    for entry in allowed_tools:
        try:
            rule = parse_rule(entry)
        except ValueError:
            continue
        if rule.kind == "command" and rule.pattern is not None:
            rules.append(rule)
    return rules


class SkillTool:
    """``skill{name, file?}``: level 2 (the body) and, for files outside the workspace, level 3."""

    kind = "read"

    def __init__(
        self,
        catalog_provider: Callable[[], SkillCatalog],
        *,
        on_activate: Callable[[Skill], None] | None = None,
    ) -> None:
        self.catalog_provider = catalog_provider
        self.on_activate = on_activate
        self.spec = ToolSpec(
            "skill",
            SKILL_MANUAL,
            schema(
                {
                    "name": {
                        "type": "string",
                        "minLength": 1,
                        "description": "skill name from the catalog",
                    },
                    "file": {"type": "string", "description": "optional: a bundled file to read"},
                },
                ["name"],
            ),
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        args = check_arguments(self.spec, args)
        catalog = self.catalog_provider()
        name = args["name"].strip()
        skill = catalog.get(name)
        if skill is None:
            close = difflib.get_close_matches(name, list(catalog.skills), n=3)
            known = ", ".join(sorted(catalog.skills)[:20]) or "none installed"
            raise ToolError(
                f"no skill named {cut(name)!r}",
                suggestion=f"did you mean {', '.join(close)}?"
                if close
                else f"available skills: {known}",
            )
        if args.get("file"):
            try:
                # What was opened is checked against the folder checked: a process running
                # meanwhile may have turned a folder in the skill into a link to ~/.ssh since.
                inside = skill.path.resolve()
                path = skill.resolve_file(args["file"])
                if ctx.session.read_denied(path):  # as read_file would refuse it
                    raise ToolError(
                        f"reading {args['file']} of skill {skill.name} is denied by a read deny "
                        "rule of your settings",
                        suggestion="do without this file",
                    )
                text = read_regular(path, [inside]).decode("utf-8", errors="replace")
            except (SkillsError, OSError, PathOutsideWorkspace) as exc:
                # An installed skill's file names are its publisher's text: skill{name} lists
                # them inside its wrapper, never bare here (the status bar repeats this line).
                suggestion = (
                    f"skill{{name: '{skill.name}'}} lists this skill's files"
                    if skill.third_party
                    else f"files in this skill: {', '.join(skill.files()[:20]) or 'none'}"
                )
                reason = (
                    f"cannot read {shown(args['file'])}: {exc.strerror}"
                    if isinstance(exc, OSError)
                    else str(exc)
                )
                raise ToolError(reason, suggestion=suggestion) from None
            # A bundled file is data whoever wrote the skill: a repository skill's file is a file
            # of the repository, which read_file wraps too.
            return external(f"skill:{skill.name}/{args['file']}", text)
        if self.on_activate is not None:
            self.on_activate(skill)
        return skill.render(ctx.root)


def _namespace(name: str) -> str:
    """An MCP server's name as Kiln's lines show it: a repository's `.kiln/mcp.json` picks it (a
    new line, a closing tag), so on one line, no "<" (``one_line``)."""
    return one_line(name, 80)


class ToolSearchTool:
    """``tool_search{query}``: rank deferred tools, announce the matches, return their schemas
    (text, for the ``call_tool`` proxy) and references (loaded natively by Anthropic).

    Its definition is the same whatever is installed, so the prefix is too; the namespaces
    ride at the tail in the ``<deferred_tools>`` block.
    """

    kind = "search"

    def __init__(
        self,
        tool_catalog: ToolCatalog,
        *,
        prepare: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.tool_catalog = tool_catalog
        self.prepare = prepare
        self.spec = ToolSpec(
            "tool_search",
            TOOL_SEARCH_MANUAL,
            schema({"query": {"type": "string", "minLength": 1, "maxLength": 500}}, ["query"]),
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        args = check_arguments(self.spec, args)
        if self.prepare is not None:
            await self.prepare()
        matches = self.tool_catalog.search(args["query"], k=SEARCH_RESULTS)
        if not matches:
            names = ", ".join(map(_namespace, self.tool_catalog.namespaces())) or "none"
            return (
                f"No deferred tool matches {args['query']!r}. Namespaces: {names}. "
                "Try other words for the action or the object, or use the built-in tools."
            )
        ctx.session.announce_tools(matches)
        return render_found(matches)


class SkillsContext:
    """One session's skills state: catalog with live reload, deferred tools, MCP connections.

    A session extension (``agent.protocols.Extension``): its tail block is the catalog. Given
    the session's ``Permissions``, a loaded skill's allowed-tools are pre-approved until the
    user's next turn.
    """

    def __init__(
        self,
        root: Path,
        *,
        permissions: Permissions | None = None,
        home: Path | None = None,
        kiln_home: Path | None = None,
        start_mcp: bool = True,
        client_servers: list[McpServerConfig] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.root = Path(root)
        where = Path(cwd) if cwd else None  # `kiln run` from a subfolder: its skills count too
        self._catalog = discover_skills(self.root, home, kiln_home=kiln_home, cwd=where)
        self.tool_catalog = ToolCatalog()
        # The user's blanket trust of project servers never counts in CI (hostile pull requests).
        self.mcp = McpServers(
            self.root,
            self.tool_catalog,
            kiln_home=kiln_home,
            honour_trust_setting=permissions is None or permissions.mode != "ci",
            client=client_servers,
            enabled=start_mcp,
        )
        self.warnings: list[str] = self.mcp.warnings  # MCP and skill-tool problems, logged
        self._notes_sent: set[str] = set()  # MCP notes and ignored repository skills, told once
        # A skill's sidecar tools never take an MCP server's namespace (a repository's skill
        # named like the user's server would otherwise answer calls meant for it).
        self._reserved = {api_safe(s.name) for s in self.mcp.sources}
        for skill in self._catalog.skills.values():
            self._add_skill_tools(skill)
        self.permissions = permissions
        self.announced_fingerprint = ""
        self.active_turn: int | None = None
        self.current_turn = 0  # the session's turn number as last seen before a request
        self.restored = False  # tools found before a resume were announced again
        self._logged: set[str] = set()
        self._log_warnings()

    def _log_warnings(self) -> None:
        """Each skill and skill-tool problem once, when the session starts and when a reload
        finds a new one (a skill broken or a bad tool declaration added while it runs)."""
        for warning in self.warnings + self._catalog.warnings:
            if warning not in self._catalog.notes and warning not in self._logged:
                self._logged.add(warning)  # notes reach the host as status notes instead
                log.warning("%s", warning)

    def _add_skill_tools(self, skill: Skill) -> None:
        if api_safe(skill.name) in self._reserved:
            if (skill.path / "tools").is_dir():
                self.warnings.append(
                    f"skill '{skill.name}': its tools are ignored: an MCP server has that name"
                )
            return
        self.warnings.extend(self.tool_catalog.add_skill(skill))

    def catalog(self) -> SkillCatalog:
        """The current catalog, re-discovered only when a skill folder changed on disk."""
        fresh = self._catalog.reload_if_changed()
        if fresh is not self._catalog:
            for name in {*self._catalog.skills, *fresh.skills}:
                if api_safe(name) not in self._reserved:
                    self.tool_catalog.remove_namespace(name)
            for skill in fresh.skills.values():
                self._add_skill_tools(skill)
            self._catalog = fresh
            self._log_warnings()
        return self._catalog

    def mcp_namespaces(self) -> dict[str, str]:
        return self.mcp.namespaces()

    async def aclose(self) -> None:
        await self.mcp.aclose()

    def tools(self) -> list[Tool]:
        """``skill``, ``tool_search`` and the ``call_tool`` proxy over this context."""
        return [
            SkillTool(self.catalog, on_activate=self.activate),
            ToolSearchTool(self.tool_catalog, prepare=self.mcp.ensure),
            CallTool(),
        ]

    def activate(self, skill: Skill | None) -> None:
        """A skill was loaded (None: none is active): its allowed-tools hold until the user's
        next turn, replacing the previous skill's. They only narrow what the rules allow; a tool
        widens only if the user granted it to this installed skill (``agent.skill_grants``)."""
        if self.permissions is not None:
            allowed = kiln_tool_names(skill.allowed_tools) if skill else set()
            self.permissions.skill_allowed = allowed
            grants = (
                self.permissions.skill_grants().get(str(skill.path.resolve()), set())
                if skill
                else set()
            )
            self.permissions.skill_granted = kiln_tool_names(sorted(grants)) & allowed
            listed = skill.allowed_tools if skill else []
            self.permissions.skill_commands = command_patterns(listed)
            self.permissions.skill_granted_commands = command_patterns(
                [entry for entry in listed if entry in grants]
            )
        self.active_turn = self.current_turn if skill else None

    def tail_block(self, session: SessionView) -> str | None:
        """The catalog block when it differs from what the model last saw, else None.

        Called as each turn begins, it also ends the previous turn's skill pre-approvals.
        """
        self.current_turn = session.turn.number
        if self.active_turn is not None and self.current_turn != self.active_turn:
            self.activate(None)
        catalog = self.catalog()
        seen = session.state.get("skills_fingerprint", "")
        mcp = self.mcp_namespaces()
        fingerprint = catalog.fingerprint if catalog.skills else ""
        if mcp:
            fingerprint += "|mcp:" + ",".join(sorted(mcp))
        if fingerprint == (seen or self.announced_fingerprint):
            return None
        self.announced_fingerprint = fingerprint
        session.state["skills_fingerprint"] = fingerprint
        text = catalog.render() or "<skills>\nNo skills are available any more.\n</skills>"
        summary = self.deferred_summary()
        return f"{text}\n{summary}" if summary else text

    def deferred_summary(self) -> str:
        """One short block naming where deferred tools come from (not the tools themselves)."""
        sidecar = {t.namespace for t in self.tool_catalog if t.source.startswith("skill:")}
        count = sum(1 for t in self.tool_catalog if t.source.startswith("skill:"))
        mcp = sorted(map(_namespace, self.mcp_namespaces()))
        if not sidecar and not mcp:
            return ""
        parts = []
        if sidecar:
            parts.append(f"{count} tools from {len(sidecar)} skill(s) (namespace = skill name)")
        if mcp:
            shown = ", ".join(mcp[:20]) + (f" and {len(mcp) - 20} more" if len(mcp) > 20 else "")
            parts.append(f"MCP servers: {shown}")
        return (
            "<deferred_tools>\n"
            + "; ".join(parts)
            + ". Find them with tool_search; tool names are namespace__tool.\n</deferred_tools>"
        )

    async def before_request(self, session: SessionView) -> None:
        """Note the turn (allowed-tools last until the next one) and tell the host, once each,
        which servers did not start and which repository skills are ignored. Native tool search
        (Anthropic): every deferred tool is declared from the first request on, so MCP servers
        start now and the whole catalog is announced; tools added later (a skill installed
        mid-session) are appended, never inserted. Otherwise, in a resumed session, tools
        found before stay callable through call_tool."""
        self.current_turn = session.turn.number
        for note in [*self.mcp.notes, *self.catalog().notes]:
            if note not in self._notes_sent:
                self._notes_sent.add(note)
                log.info("%s", note)
                await session.emit(StatusNote(text=note))
        if session.config.subagent:
            return  # a read-only sub-agent gets no deferred tools
        if getattr(session.model, "native_tool_search", False):
            await self.mcp.ensure()
            session.announce_tools(list(self.tool_catalog))
        elif not self.restored:
            self.restored = True
            found = set(session.state.get("deferred", []))
            if found and any(name.split("__", 1)[0] in self.mcp_namespaces() for name in found):
                await self.mcp.ensure()
            session.announce_tools([t for t in self.tool_catalog if t.name in found])
