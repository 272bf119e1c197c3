"""The errors table: typed exceptions with a user-facing hint, a retryable flag and an exit code.

Every class here derives from ``kiln_errors.KilnError`` (re-exported), the base the leaf
libraries' errors share too; the CLI turns any of them into one line and its exit code.
"""

from __future__ import annotations

from kiln_errors import KilnError

__all__ = ["KilnError"]  # and the subclasses below

# Exit codes of `kiln run` (a contract: scripts and CI rely on them).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_LIMIT = 3
EXIT_PROVIDER = 4
EXIT_PERMISSION = 5
EXIT_CANCELLED = 130


class UsageError(KilnError):
    exit_code = EXIT_USAGE


class ConfigError(KilnError):
    exit_code = EXIT_USAGE


class ProviderError(KilnError):
    exit_code = EXIT_PROVIDER


class ProviderUnavailable(ProviderError):
    """Endpoint unreachable or no provider configured."""


class ContextTooLong(ProviderError):
    """The provider refused the request as longer than the model's context window.

    ``window`` is the limit the provider named, when it named one (it may be smaller than the
    window Kiln assumed, as on a local server started with a small context)."""

    window: int | None = None


class RateLimited(ProviderError):
    retryable = True


class ServerError(ProviderError):
    retryable = True


class PermissionDenied(KilnError):
    exit_code = EXIT_PERMISSION


class NoAnswer(KilnError):
    """A permission question nobody answered (the host stopped waiting, or the question could
    not be delivered). The action is refused with this message as the reason, so neither the
    model nor the user is told that someone declined."""


class PathOutsideWorkspace(PermissionDenied):
    hint = "paths must resolve inside the workspace root"


class ToolError(KilnError):
    """A tool failed in a way the model should hear about (returned to it, never raised out)."""

    def __init__(self, message: str, *, suggestion: str = "") -> None:
        super().__init__(message, hint=suggestion)
        self.suggestion = suggestion


class SessionNotFound(KilnError):
    exit_code = EXIT_USAGE


class SessionBusy(KilnError):
    """Another process (or another open copy of the session) is running a turn in it, or
    wrote to it since this copy was loaded: appending now would interleave two trajectories."""

    exit_code = EXIT_USAGE
    retryable = True


class SessionDamaged(KilnError):
    """A stored session row is not what Kiln writes (hand-edited, or damaged on disk)."""

    hint = "start a new session; the rest of the store is unaffected"
