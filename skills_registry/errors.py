"""Errors of the skills library, in the same duck-typed shape as ``agent.errors``.

This package is a leaf and must not import ``agent``; the CLI root only looks for ``hint`` and
``exit_code`` attributes, so these errors still become one clear line and an exit code.
"""

from __future__ import annotations


class SkillsError(Exception):
    """Base of every error this package raises on purpose."""

    hint: str = ""
    retryable: bool = False
    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


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
