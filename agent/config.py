"""What a session is configured with (limits, permission mode, provider), set by its host."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.output_budget import DEFAULT_BUDGET_CHARS

STEP_LIMIT = 10_000  # the most model requests any host lets one run or turn take: more is no limit


@dataclass
class AgentConfig:
    mode: str = "ask"  # the mode a session starts in; the live one is Session.mode
    max_steps: int = 50
    max_seconds: float | None = None
    max_cost_usd: float | None = None
    max_tokens: int = 8192
    output_budget: int = DEFAULT_BUDGET_CHARS
    provider: str | None = None
    model: str | None = None
    redact_env: bool = False  # redact secret-looking env values from outputs (CI)
    subagent: bool = False
    # MCP servers the host passes for this session only (an ACP client's ``mcpServers``, as
    # ``skills_registry.mcp_config.McpServerConfig``): started through the sandbox, never stored.
    mcp_servers: list[Any] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
