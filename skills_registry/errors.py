"""Errors of the skills library, derived from ``kiln_errors.KilnError``.

This package is a leaf and must not import ``agent``; sharing the base class with the rest of
Kiln, its errors still become one clear line and an exit code in the CLI.
"""

from __future__ import annotations

from kiln_errors import KilnError


class SkillsError(KilnError):
    """Base of every error this package raises on purpose."""


class SkillInvalid(SkillsError):
    """A SKILL.md that cannot be used at all (no frontmatter, no name, unreadable)."""

    hint = "run `kiln skills validate PATH` to see every problem"


class SkillNotFound(SkillsError):
    exit_code = 2


class ToolCallError(SkillsError):
    """A deferred tool (sidecar script or MCP server) failed; the agent relays it to the model."""

    retryable = True


class McpConfigError(SkillsError):
    exit_code = 2
    hint = 'expected {"mcpServers": {NAME: {"command": ..., "args": [...]} | {"url": ...}}}'


class McpSettingError(SkillsError):
    """A ``KILN_MCP_*`` environment value that is no timeout Kiln can keep."""

    exit_code = 2
