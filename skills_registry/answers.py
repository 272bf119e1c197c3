"""The shapes of the registry answers that the CLI prints: searches, tokens, the audit log,
whoami, a namespace's usage and a publish receipt.

None of these is signed (a signed answer is checked in ``skills_registry.verified``), so a
hostile registry or proxy chooses them freely. Each is checked for the fields and types that
its readers use before anyone indexes into it: a wrong shape is one ``BadResponse`` line
naming the request, never a ``KeyError`` reported as an internal error.
"""

from __future__ import annotations

from typing import Any

from skills_registry.registry.errors import BadResponse

_STR, _OPT, _ANY = (str,), (str, type(None)), object

SEARCH_ROW = {
    "id": _STR,
    "name": _STR,
    "description": _STR,
    "latestVersion": _OPT,
    "deprecated": (str, bool, type(None)),
}
TOKEN_ROW = {
    "id": _STR,
    "label": _OPT,
    "scopes": list,
    "expiresAt": _OPT,
    "revokedAt": _OPT,
}
AUDIT_ROW = {
    "at": _STR,
    "action": _STR,
    "id": _STR,
    "version": _OPT,
    "sha256": _OPT,
    "tokenId": _OPT,
    "tokenLabel": _OPT,
}
RECEIPT = {"id": _STR, "version": _STR, "archiveSha256": _STR}
MINTED = {"token": _STR, "namespace": _STR, "expiresAt": _OPT}
QUOTA = {"used": int, "limit": int}
USAGE = {
    "namespace": _STR,
    "namespaceBytes": dict,
    "versionsPerSkill": dict,
    "publishesPerHour": dict,
}


def namespace_usage(answer: dict[str, Any], where: str) -> dict[str, Any]:
    """A namespace's usage (``GET /v1/namespaces/{ns}/usage``), checked to its leaves."""
    shaped(answer, USAGE, where)
    shaped(answer["namespaceBytes"], QUOTA, f"{where}: namespaceBytes")
    shaped(answer["publishesPerHour"], QUOTA, f"{where}: publishesPerHour")
    if answer.get("writesPerHour") is not None:  # listed since the write rate became a flag
        shaped(answer["writesPerHour"], QUOTA, f"{where}: writesPerHour")
    versions = shaped(
        answer["versionsPerSkill"],
        {"limit": int, "largest": (dict, type(None)), "skills": list},
        f"{where}: versionsPerSkill",
    )
    if versions["largest"] is not None:
        shaped(versions["largest"], {"id": _STR, "used": int}, f"{where}: largest")
    rows(versions, "skills", {"id": _STR, "used": int}, f"{where}: versionsPerSkill")
    return answer


def shaped(value: Any, fields: dict[str, Any], where: str) -> dict[str, Any]:
    """``value`` if it is an object whose ``fields`` have the given types (a missing optional
    field reads as None), else ``BadResponse``."""
    if not isinstance(value, dict):
        raise BadResponse(f"{where}: expected an object, got {type(value).__name__}")
    for name, kinds in fields.items():
        got = value.get(name)
        if kinds is not _ANY and not isinstance(got, kinds):
            raise BadResponse(f"{where}: field {name!r} is {type(got).__name__}, not as expected")
    if isinstance(value.get("scopes"), list) and not all(
        isinstance(s, str) for s in value["scopes"]
    ):
        raise BadResponse(f"{where}: field 'scopes' must list strings")
    return value


def rows(answer: dict[str, Any], key: str, fields: dict[str, Any], where: str) -> list[Any]:
    """``answer[key]``, a list of objects of the given shape, else ``BadResponse``."""
    listed = answer.get(key)
    if not isinstance(listed, list):
        raise BadResponse(f"{where}: {key!r} is not a list")
    return [shaped(item, fields, f"{where}: {key}[{i}]") for i, item in enumerate(listed)]
