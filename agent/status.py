"""The status bar: facts about the session kept by code (never written by a model).

Rendered as key-value lines inside ``<agent_status>`` and appended at the tail of the next
request when its content changed, each reading with one line of guidance.
"""

from __future__ import annotations

import platform
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from agent.types import canonical_json

SLOW_FACTOR = 3.0
SLOW_MIN_SECONDS = 10.0
REPEAT_LIMIT = 3


@dataclass
class StatusBar:
    cwd: str
    started: float = field(default_factory=time.monotonic)
    calls: Counter[str] = field(default_factory=Counter)
    durations: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    repeats: Counter[str] = field(default_factory=Counter)
    consecutive_failures: int = 0
    last_error: tuple[str, str, str] | None = None  # tool, message, suggestion
    slow: list[str] = field(default_factory=list)
    todos: list[dict[str, Any]] = field(default_factory=list)
    context_used: float = 0.0
    budget_note: str = ""
    _last_rendered: str = ""

    def record_call(
        self, tool: str, args: dict[str, Any], seconds: float, error: tuple[str, str] | None
    ) -> None:
        usual = self.durations[tool]
        if usual and seconds > max(SLOW_MIN_SECONDS, SLOW_FACTOR * (sum(usual) / len(usual))):
            self.slow.append(f"{tool} took {seconds:.0f}s (usual {sum(usual) / len(usual):.1f}s)")
            self.slow = self.slow[-3:]
        usual.append(seconds)
        self.calls[tool] += 1
        self.repeats[f"{tool}:{canonical_json(args)}"] += 1
        if error:
            self.consecutive_failures += 1
            self.last_error = (tool, error[0], error[1])
        else:
            self.consecutive_failures = 0

    def render(self) -> str:
        lines = [f"cwd: {self.cwd}", f"os: {platform.system()} {platform.machine()}"]
        minutes = (time.monotonic() - self.started) / 60
        lines.append(f"elapsed: {minutes:.0f} min")
        if self.calls:
            lines.append(
                "tool_calls: " + ", ".join(f"{k}={v}" for k, v in sorted(self.calls.items()))
            )
        worst = max(self.repeats.values(), default=0)
        if worst >= REPEAT_LIMIT:
            lines.append(
                f"repeated_call: the same call was made {worst} times -> change approach instead of repeating it"
            )
        if self.last_error:
            tool, message, suggestion = self.last_error
            lines.append(f"last_error: {tool}: {message.splitlines()[0][:200]}")
            if suggestion:
                lines.append(f"suggestion: {suggestion[:200]}")
        if self.consecutive_failures >= REPEAT_LIMIT:
            lines.append(
                f"failures_in_a_row: {self.consecutive_failures} -> stop retrying; diagnose or change approach"
            )
        for note in self.slow:
            lines.append(f"slow_call: {note} -> check why before running it again")
        if self.todos:
            lines.append(
                "todos: " + "; ".join(f"[{t['status']}] {t['content'][:80]}" for t in self.todos)
            )
        if self.context_used:
            guidance = (
                " -> finish the current step and summarise" if self.context_used > 0.8 else ""
            )
            lines.append(f"context_used: {self.context_used:.0%}{guidance}")
        if self.budget_note:
            lines.append(f"budget: {self.budget_note}")
        return "<agent_status>\n" + "\n".join(lines) + "\n</agent_status>"

    def changed_block(self) -> str | None:
        """The rendering if it differs from the last one appended, else None."""
        text = self.render()
        if text == self._last_rendered:
            return None
        self._last_rendered = text
        return text
