"""Errors of the marketplace (registry server, archives, client installs).

Same duck-typed shape as the rest of Kiln (message, ``hint``, ``retryable``, ``exit_code``) so
the CLI prints one line and exits non-zero; this leaf package never imports ``agent``. The
``status`` attribute is the HTTP status the server answers with when the error reaches it.
"""

from __future__ import annotations

from skills_registry.errors import SkillsError


class RegistryError(SkillsError):
    status: int = 400
    code: str = "bad_request"


class UsageError(RegistryError):
    exit_code = 2


class NoRegistry(UsageError):
    """No registry URL was given or configured."""


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
    hint = "check the registry URL (--registry or KILN_REGISTRY) and that the server is running"


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
