"""Errors of the marketplace (registry server, archives, client installs).

Same duck-typed shape as the rest of Kiln (message, ``hint``, ``retryable``, ``exit_code``) so
the CLI prints one line and exits non-zero; this leaf package never imports ``agent``. The
``status`` attribute is the HTTP status the server answers with when the error reaches it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from skills_registry.errors import SkillsError


class RegistryError(SkillsError):
    status: int = 400
    code: str = "bad_request"


class UsageError(RegistryError):
    exit_code = 2


class NoRegistry(UsageError):
    """No registry URL was given or configured."""


class NotARegistry(UsageError):
    """The SQLite file named as the registry's database holds another application's tables;
    nothing was written to it."""

    hint = "pass --data a folder of its own, or --db sqlite:///… a new file"


class ArchiveError(RegistryError):
    """An archive is unsafe or malformed; nothing from it was written."""

    status = 422
    code = "invalid_archive"
    hint = "build the archive with `kiln skills publish PATH`"


class ValidationFailed(RegistryError):
    """A publish failed validation; ``errors`` lists every problem, not just the first."""

    status = 422
    code = "validation_failed"

    def __init__(self, errors: list[str], *, hint: str | None = None) -> None:
        super().__init__("; ".join(errors) or "validation failed", hint=hint)
        self.errors = list(errors)


class NotFound(RegistryError):
    status = 404
    code = "not_found"


class InvalidId(NotFound):
    """An id the registry's rules refuse, asked for by exact id: one written before the rules
    held stays in the database but is never served (a git URL, a folder, a plugin name)."""

    code = "invalid_id"
    hint = "ids written before the registry's id rules held are kept but not served"


class InvalidDistTag(UsageError):
    """A dist-tag name the registry's rule refuses (``id_rules.dist_tag_refusal``)."""

    status = 422
    code = "invalid_dist_tag"


FIND_SKILL_HINT = "find its id with `kiln skills search QUERY` (GET /v1/skills?q=)"


class Conflict(RegistryError):
    status = 409
    code = "conflict"
    hint = "published versions are immutable; bump the version"


class KeyMismatch(Conflict):
    """The database was bound to another signing key at its first start."""

    hint = "give every instance the same --signing-key file (or KILN_REGISTRY_SIGNING_KEY)"

    def __init__(self, bound: str, key_id: str) -> None:
        super().__init__(
            f"this registry database is signed with {bound}, but this instance's key is {key_id}"
        )
        self.bound = bound


class Unauthorized(RegistryError):
    status = 401
    code = "unauthorized"
    exit_code = 5
    hint = "pass --token or run `kiln skills login --registry URL`"


class Forbidden(RegistryError):
    status = 403
    code = "forbidden"
    exit_code = 5


class TooLarge(RegistryError):
    status = 413
    code = "too_large"


class RegistryUnavailable(RegistryError):
    """The registry could not be reached or answered with a server error."""

    retryable = True
    status = 502
    code = "unavailable"
    hint = (
        "check the registry URL (--registry, KILN_REGISTRY or 'registry' in "
        "$KILN_HOME/settings.json) and that the server is running"
    )


class IntegrityError(RegistryError):
    """A hash or signature does not match: the bytes are not what the registry signed."""

    exit_code = 5
    code = "integrity"
    hint = "do not install this artifact; report it to the registry operator"


class BadResponse(IntegrityError):
    """The registry answered with something a registry never sends: too large, not the JSON
    shape asked for, a redirect off the download path. Nothing from it was used."""

    code = "bad_response"
    hint = "the registry or a proxy in front of it misbehaves; report it to the operator"


class TrustError(IntegrityError):
    """The registry's signing key is not pinned (where first use is not allowed) or differs."""

    hint = "if the operator announced a new key, pin it: kiln skills trust URL --key KEY"


class LocallyModified(RegistryError):
    exit_code = 1
    code = "locally_modified"
    hint = "the installed files differ from the lockfile; pass --force to overwrite them"


class WriteFailed(RegistryError):
    """The file system refused a write (full disk, read-only folder, quota): nothing changed."""

    exit_code = 1
    code = "write_failed"
    hint = "free some space or fix the folder's permissions, then run the command again"


class ReviewRequired(RegistryError):
    exit_code = 5
    code = "review_required"
    hint = (
        "review with `kiln skills info ID` and install interactively, or pin it in skills-lock.json"
    )


class QuotaExceeded(RegistryError):
    """A publish would take a namespace past one of the operator's quotas; nothing was stored.
    ``quota`` is its name as ``/.well-known/kiln-registry.json`` lists it under ``limits``."""

    status = 413
    code = "quota_exceeded"
    exit_code = 5

    hint = "ask the registry's operator to raise it"

    def __init__(
        self,
        message: str,
        *,
        quota: str,
        usage: int,
        limit: int,
        status: int = 413,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.quota, self.usage, self.limit, self.status = quota, usage, limit, status


class RateLimited(RegistryError):
    """Too many publishes from one namespace lately: answered 429 with ``Retry-After``."""

    status = 429
    code = "rate_limited"
    exit_code = 5

    def __init__(self, message: str, *, retry_after: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retry_after = retry_after

    @classmethod
    def answered(cls, message: str, header: str) -> RateLimited:
        """The client's one line for a 429: the registry's reason and when to retry, from
        ``Retry-After`` (seconds, or an HTTP date)."""
        now = datetime.now(UTC)
        try:
            at = (
                now + timedelta(seconds=int(header))
                if header.strip().isdigit()
                else parsedate_to_datetime(header).astimezone(UTC)
            )
        except (TypeError, ValueError, OverflowError):
            return cls(f"{message}; retry later (no usable Retry-After)", retry_after=0, hint="")
        wait = max(0, round((at - now).total_seconds()))
        return cls(
            f"{message}; retry after {at:%Y-%m-%d %H:%M:%S} UTC (in {wait} s)",
            retry_after=wait,
            hint="",
        )
