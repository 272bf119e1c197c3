"""Compaction's settings (``AgentConfig.extra["compaction"]``, ``KILN_COMPACT_AT``), checked
once: a setting that cannot work is refused with one clear line, and a trigger at or below the
target pulls the target under it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from agent.errors import ConfigError
from kiln_errors.setting import number_in

TARGET_SHARE_OF_TRIGGER = 0.6  # the clamped target when a trigger is set at or below it


@dataclass
class CompactionConfig:
    trigger: float = 0.8  # fraction of the window that starts a compaction
    target: float = 0.5  # stop compacting once under this fraction
    keep_rounds: int = 3  # latest rounds kept verbatim
    noise_min_chars: int = 1500  # search results smaller than this are not noise
    max_failures: int = 3  # summariser failures in a row before the breaker opens
    summary_max_tokens: int = 1024

    @classmethod
    def from_extra(cls, extra: dict[str, Any]) -> CompactionConfig:
        """``AgentConfig.extra["compaction"]`` overrides; ``KILN_COMPACT_AT`` sets the trigger."""
        given = dict(extra.get("compaction", {}))
        raw = os.environ.get("KILN_COMPACT_AT")
        if raw and "trigger" not in given:
            share = number_in(raw.strip().rstrip("%"), 0, 100)
            value = -1.0 if share is None else share / (100 if raw.strip().endswith("%") else 1)
            if not 0.1 <= value <= 1.0:
                raise ConfigError(
                    f"KILN_COMPACT_AT={raw!r} is not a share of the window",
                    hint="use a fraction such as 0.8 or a percentage such as 80%",
                )
            given["trigger"] = value
        config = cls(**{k: v for k, v in given.items() if k in cls.__dataclass_fields__})
        return config.validated()

    def validated(self) -> CompactionConfig:
        """Settings that cannot work are refused with one clear line; a trigger at or below the
        target (``KILN_COMPACT_AT=0.1`` against the default 0.5) pulls the target under it, so
        a compaction frees real room instead of running again on the next step."""
        if not 0 < self.trigger <= 1:
            raise ConfigError(
                f"compaction trigger {self.trigger!r} is not a share of the window",
                hint="use a fraction such as 0.8",
            )
        if self.keep_rounds < 1 or self.summary_max_tokens < 64 or self.max_failures < 0:
            raise ConfigError(
                "compaction settings out of range (keep_rounds >= 1, summary_max_tokens >= 64)",
                hint="fix the compaction settings",
            )
        if not 0 < self.target < self.trigger:
            self.target = round(self.trigger * TARGET_SHARE_OF_TRIGGER, 4)
        return self
