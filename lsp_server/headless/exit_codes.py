"""Exit codes of `kiln run` — a contract that scripts and CI pipelines rely on (see docs/ci.md)."""

from __future__ import annotations

OK = 0  # finished (plain run) / fixed and verified (--ci)
FAILED = 1  # an unexpected internal failure
USAGE = 2  # bad usage or configuration
LIMIT = 3  # --max-steps / --max-minutes / --max-cost-usd reached, or the turn was stuck
PROVIDER = 4  # the model provider failed (unreachable, auth, 5xx after retries)
REFUSED = 5  # an action was refused by the permission policy
CHANGED_UNVERIFIED = 10  # --ci: files changed, but no verification passed afterwards
NOTHING_TO_DO = 11  # --ci: no change was needed (verification already passed, or no change made)
NOT_FIXED = 12  # --ci: verification still fails and nothing was changed
CANCELLED = 130

MEANING = {
    OK: "ok",
    FAILED: "failed",
    USAGE: "bad usage",
    LIMIT: "limit reached",
    PROVIDER: "provider error",
    REFUSED: "refused by policy",
    CHANGED_UNVERIFIED: "changed but unverified",
    NOTHING_TO_DO: "nothing to do",
    NOT_FIXED: "not fixed",
    CANCELLED: "cancelled",
}

# The run ended without doing its work (the result's ``is_error``); 5 and 10-12 are outcomes.
ERRORS = frozenset({FAILED, USAGE, LIMIT, PROVIDER, CANCELLED})

# the stop reasons that exit LIMIT ("repeated_failure": one call failed the same way 5 times in a row)
LIMITS = ("max_steps", "max_time", "max_cost", "repeated_failure")
# A run that ended so is half done: its branch would be pushed like a finished one.
EARLY_STOPS = (*LIMITS, "error", "cancelled")
