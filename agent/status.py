"""The status bar: facts about the session kept by code (never written by a model).

Rendered as key-value lines inside ``<agent_status>`` and appended at the tail of the next
request. Every reading carries one line of guidance after ``->`` so the model gets a nudge
("3 identical failures -> change approach") rather than a bare number. Every block stays in the
transcript (nothing sent is rewritten), so the bar must stay small: in ``short`` mode (the
default) the first block is complete and later ones carry only readings that call for
attention and changed (an error, repeats, a slow call, TODOs, a context band, a limit close
by), or nothing at all; counters and the clock appear in complete blocks only. ``delta`` sends
every changed line; ``full`` (ask for it with ``KILN_STATUS_MODE``) re-sends the whole block whenever
anything changed. After a compaction, and in a resumed session's first request, the next block
is complete again.

Readings clear themselves: ``repeated_call`` once the agent's last calls are other calls,
``last_error`` after ``ERROR_TTL`` further calls, and a command that exits non-zero counts as
an error.
"""

from __future__ import annotations

import os
import platform
import re
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from agent.errors import ConfigError
from agent.types import canonical_json

SLOW_FACTOR = 3.0
SLOW_MIN_SECONDS = 10.0
REPEAT_LIMIT = 3
RECENT_CALLS = 10  # repeats are counted among this many latest calls
ERROR_TTL = 4  # calls after which an error no longer shows (unless it recurs)
CONTEXT_WARN = 0.6
CONTEXT_FINISH = 0.8
STATUS_MODES = ("short", "delta", "full", "append")  # "append" is the old name of "full"
# Readings that a short-mode block carries when they change; the rest wait for a full block.
NOTABLE = frozenset(
    ["last_error", "failures_in_a_row", "repeated_call", "identical_failures", "slow_call",
     "todos", "context_used", "budget"]
)  # fmt: skip


# Characters that read as "<" or ">" (the wrapper's confusables, ``skills_registry.skill``) and
# the encodings a model decodes as it reads, in status text from outside Kiln.
_ANGLES = str.maketrans(
    dict.fromkeys("<\uff1c\ufe64\u02c2\u02f1\u1438\u2039\u2329\u276e\u27e8\u3008", "[")
    | dict.fromkeys(">\uff1e\ufe65\u02c3\u02f2\u1433\u203a\u232a\u276f\u27e9\u3009", "]")
)
_ENCODED_ANGLE = re.compile(
    r"&(?:(lt)|gt|#0*(60)|#0*62|#x0*(3c)|#x0*3e);?|\\(?:u00(3c)|u003e|x(3c)|x3e)|%(3c)|%3e",
    re.IGNORECASE,
)
MAX_VALUE = 400  # characters of one value or guidance, escapes included


def one_line(text: str, limit: int = MAX_VALUE) -> str:
    """``text`` from outside Kiln (a path, a tool name the model made up, an error, a TODO) as
    part of one status line: each character that does not print (a newline, an escape, a bidi
    mark) shown as its escape (``\\n``, ``\\x1b``, ``\\u202e``), each "<" or ">" (or a look-alike or
    an encoding of one) as "[" or "]", so it can neither end the block, start a line or a
    reading's guidance (" -> ") of its own, nor hide what it says; cut at ``limit``."""
    if not (text.isascii() and text.isprintable() and not any(c in text for c in "<>&%\\")):
        text = _ENCODED_ANGLE.sub(lambda m: "[" if any(m.groups()) else "]", text)
        text = "".join(
            c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
            for c in text.translate(_ANGLES)
        )
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class Reading:
    """One status line: what was measured and what to do about it. Both may quote text from
    outside Kiln, so both are shown through ``one_line``."""

    key: str
    value: str
    guidance: str = ""

    def line(self) -> str:
        guidance = f" -> {one_line(self.guidance)}" if self.guidance else ""
        return f"{self.key}: {one_line(self.value)}{guidance}"


def status_mode(extra: dict[str, Any]) -> str:
    """``status_mode`` from the session config, else ``KILN_STATUS_MODE``, else ``short``."""
    raw = extra.get("status_mode") or os.environ.get("KILN_STATUS_MODE") or "short"
    if raw not in STATUS_MODES:
        raise ConfigError(
            f"status mode {raw!r} is not one of {', '.join(STATUS_MODES[:3])}",
            hint="set KILN_STATUS_MODE to short (the default), delta or full",
        )
    return "full" if raw == "append" else str(raw)


def _call_key(tool: str, args: dict[str, Any]) -> str:
    return f"{tool}{canonical_json(args)}"


@dataclass
class StatusBar:
    cwd: str
    started: float = field(default_factory=time.monotonic)
    calls: Counter[str] = field(default_factory=Counter)
    durations: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    recent: deque[tuple[str, bool]] = field(
        default_factory=lambda: deque(maxlen=RECENT_CALLS)
    )  # (call key, failed) of the latest calls
    consecutive_failures: int = 0
    last_error: tuple[str, str, str] | None = None  # tool, message, suggestion
    last_error_at: int = 0  # total calls when it happened
    slow: list[str] = field(default_factory=list)
    todos: list[dict[str, Any]] = field(default_factory=list)
    context_used: float = 0.0
    budget_note: str = ""
    steps: int = 0
    max_steps: int = 0
    max_seconds: float | None = None
    os_name: str = field(default_factory=lambda: f"{platform.system()} {platform.machine()}")
    mode: str = "short"
    clock: Any = time.monotonic
    _last_rendered: str = ""
    _last_lines: dict[str, tuple[str, str]] = field(default_factory=dict)
    _sent_full: bool = False
    _synced: bool = False

    def record_call(
        self, tool: str, args: dict[str, Any], seconds: float, error: tuple[str, str] | None
    ) -> None:
        usual = self.durations[tool]
        if usual:
            mean = sum(usual) / len(usual)
            if seconds > max(SLOW_MIN_SECONDS, SLOW_FACTOR * mean):
                self.slow.append(f"{tool} took {seconds:.0f}s (usual {mean:.1f}s)")
                self.slow = self.slow[-3:]
        usual.append(seconds)
        self.calls[tool] += 1
        self.recent.append((_call_key(tool, args), bool(error)))
        if error:
            self.consecutive_failures += 1
            self.last_error = (tool, error[0], error[1])
            self.last_error_at = sum(self.calls.values())
        else:
            self.consecutive_failures = 0
            self.last_error = (
                None if self.last_error and self.last_error[0] == tool else self.last_error
            )

    def sync(
        self,
        *,
        steps: int,
        max_steps: int,
        config: Any,
        messages: list[dict[str, Any]],
        state: dict[str, Any],
    ) -> None:
        """Bring the limit readings up to date (``config`` is the session's ``AgentConfig``;
        ``max_steps`` what the turn may reach, a sub-agent's bounded by the run's steps left);
        after a resume, rebuild the counters from the stored trajectory (tool calls per tool)
        and state (TODOs, context use) the first time."""
        self.steps, self.max_steps = steps, max_steps
        self.max_seconds = config.max_seconds
        if self._synced:
            return
        self._synced = True
        if not self.context_used:  # measured by the last reply, in whichever process it came
            self.context_used = float(state.get("context_used") or 0.0)
        if not self.calls:
            for message in messages:
                for block in message.get("content", []):
                    if block.get("type") == "tool_use":
                        self.calls[block["name"]] += 1
            # the messages are the current epoch's only: a compaction took the earlier calls
            stored = state.get("tool_calls")
            for name, count in stored.items() if isinstance(stored, dict) else []:
                if isinstance(count, int) and count > self.calls[name]:
                    self.calls[name] = count
        if not self.todos and state.get("todos"):
            self.todos = list(state["todos"])

    # -- readings ---------------------------------------------------------------------------

    def readings(self) -> list[Reading]:
        """Every reading in a fixed order, each with its guidance."""
        out = [
            Reading("cwd", self.cwd, "paths in tool calls are relative to it"),
            Reading("os", self.os_name, "use commands that exist on this system"),
            self._elapsed(),
        ]
        if self.max_steps:
            left = self.max_steps - self.steps
            out.append(
                Reading(
                    "steps",
                    f"{self.steps} of {self.max_steps}",
                    "finish now: verify and report" if left <= 3 else f"{left} left in this turn",
                )
            )
        if self.calls:
            total = sum(self.calls.values())
            out.append(
                Reading(
                    "tool_calls",
                    ", ".join(f"{k}={v}" for k, v in sorted(self.calls.items())),
                    "many calls: prefer search_code or task over more reads"
                    if total >= 40
                    else "run independent calls together in one step",
                )
            )
        out += self._repeats()
        if self.last_error and sum(self.calls.values()) - self.last_error_at >= ERROR_TTL:
            self.last_error = None  # aged out: several calls since, none failing like it
        if self.last_error:
            tool, message, suggestion = self.last_error
            first = message.splitlines()[0][:200] if message else "failed"
            out.append(
                Reading(
                    "last_error",
                    f"{tool}: {first}",
                    suggestion[:200] if suggestion else "read the error before retrying",
                )
            )
        if self.consecutive_failures >= REPEAT_LIMIT:
            out.append(
                Reading(
                    "failures_in_a_row",
                    str(self.consecutive_failures),
                    "stop retrying; diagnose or change approach",
                )
            )
        for note in self.slow:
            out.append(Reading("slow_call", note, "check why before running it again"))
        if self.todos:
            out.append(self._todos())
        if self.context_used:
            out.append(self._context())
        if self.budget_note:
            out.append(Reading("budget", self.budget_note, "finish the task within it"))
        return out

    def _elapsed(self) -> Reading:
        seconds = self.clock() - self.started
        value = f"{seconds / 60:.0f} min"
        if self.max_seconds:
            left = self.max_seconds - seconds
            value += f" of {self.max_seconds / 60:.0f} min"
            if left < 0.2 * self.max_seconds:
                return Reading("elapsed", value, "time is short: wrap up and report")
            return Reading("elapsed", value, f"{left / 60:.0f} min left")
        return Reading("elapsed", value, "no time limit; stay on the user's task")

    def _repeats(self) -> list[Reading]:
        """Repeats among the latest calls, shown only while the agent is still making that call
        (one of its last two): once it changes course the reading clears."""
        out = []
        latest = [key for key, _ in list(self.recent)[-2:]]
        made = Counter(key for key, _ in self.recent if key in latest)
        failed = Counter(key for key, bad in self.recent if bad and key in latest)
        key, worst = max(made.items(), key=lambda kv: kv[1], default=("", 0))
        if worst >= REPEAT_LIMIT:
            out.append(
                Reading(
                    "repeated_call",
                    f"{key[:120]} made {worst} times",
                    "change approach instead of repeating it",
                )
            )
        fkey, fails = max(failed.items(), key=lambda kv: kv[1], default=("", 0))
        if fails >= REPEAT_LIMIT:
            out.append(
                Reading(
                    "identical_failures",
                    f"{fkey[:120]} failed {fails} times",
                    f"{fails} identical failures: change approach",
                )
            )
        return out

    def _todos(self) -> Reading:
        items = "; ".join(
            f"[{t.get('status', '?')}] {str(t.get('content', ''))[:80]}" for t in self.todos
        )
        open_items = [t for t in self.todos if t.get("status") != "completed"]
        if not open_items:
            guidance = "all done: verify and report"
        elif not any(t.get("status") == "in_progress" for t in open_items):
            guidance = f"{len(open_items)} open: mark the next one in_progress"
        else:
            guidance = f"{len(open_items)} open: keep the list current as you finish each"
        return Reading("todos", items, guidance)

    def _context(self) -> Reading:
        used = self.context_used
        if used > CONTEXT_FINISH:
            guidance = "finish the current step and summarise; older rounds will be compacted"
        elif used > CONTEXT_WARN:
            guidance = "read ranges (offset/limit) and delegate broad exploration to task"
        else:
            guidance = "room to spare"
        # 5 % steps: the block is re-sent when a reading changes, not on every token
        return Reading("context_used", f"{round(used * 20) * 5}% of the window", guidance)

    # -- rendering --------------------------------------------------------------------------

    def render(self) -> str:
        lines = [r.line() for r in self.readings()]
        return "<agent_status>\n" + "\n".join(lines) + "\n</agent_status>"

    def changed_block(self) -> str | None:
        """The block to append now, else None: complete the first time (and after a reset);
        then per ``mode`` (see the module docstring)."""
        readings = self.readings()
        text = "<agent_status>\n" + "\n".join(r.line() for r in readings) + "\n</agent_status>"
        if text == self._last_rendered:
            return None
        self._last_rendered = text
        if self.mode in ("short", "delta"):
            readings = [r for r in readings if self.mode == "delta" or self._notable(r)]
        current = {self._key(r): (self._signature(r), r.line()) for r in readings}
        previous, first = self._last_lines, not self._last_lines and not self._sent_full
        if self.mode in ("full", "append") or first:
            self._sent_full = True
            self._last_lines = current
            return text
        changed = [
            line for key, (sig, line) in current.items() if previous.get(key, ("",))[0] != sig
        ]
        gone = [f"{key.split(' ')[0]}: (cleared)" for key in previous if key not in current]
        self._last_lines = current
        if not changed and not gone:
            return None
        return '<agent_status mode="delta">\n' + "\n".join(changed + gone) + "\n</agent_status>"

    @staticmethod
    def _key(reading: Reading) -> str:
        return reading.key + ("" if reading.key != "slow_call" else " " + reading.value)

    def _notable(self, reading: Reading) -> bool:
        if reading.key == "context_used":
            return self.context_used > CONTEXT_WARN / 2  # room to spare is not news
        if reading.key in NOTABLE:
            return True
        limit_close = reading.guidance.startswith(("finish now", "time is short"))
        return reading.key in ("steps", "elapsed") and limit_close

    def _signature(self, reading: Reading) -> str:
        """What must change for a reading to be re-sent: the context reading only when it
        enters another fifth of the window or another guidance band, in short mode."""
        if reading.key == "context_used" and self.mode == "short":
            return f"{int(self.context_used * 5)}|{reading.guidance}"
        return reading.line()

    def reset(self) -> None:
        """Forget what was sent, so the next block is complete (after a compaction)."""
        self._last_rendered = ""
        self._last_lines = {}
        self._sent_full = False
