"""The registry's write endpoints: publish, status, deprecation, dist-tags, tokens, OIDC.

Every write names a bearer token whose scope allows it (``publish``; ``yank`` for status and
deprecation; ``tag`` for dist-tags), is refused when the token is expired or revoked, and is
recorded in the audit log with the token's id and label and the archive sha256 it concerns.
Publish refuses what it can before reading the body (wrong token, version taken, a quota
already reached) and writes the blob only after validation passed and the version and the
quotas are known to be free, so a rejected upload leaves no bytes behind (but for a quota
refused in the inserting transaction after a race: ``kiln registry sweep`` removes those).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from skills_registry.archive import MAX_ARCHIVE_BYTES
from skills_registry.registry.errors import (
    Conflict,
    Forbidden,
    InvalidDistTag,
    TooLarge,
    Unauthorized,
    ValidationFailed,
)
from skills_registry.registry.http import (
    Registry,
    int_param,
    json_response,
    read_body,
    read_json,
    registry_of,
    skill_id_of,
)
from skills_registry.registry.id_rules import dist_tag_refusal, namespace_refusal
from skills_registry.registry.oidc import exchange
from skills_registry.registry.publish import build_release, check_id
from skills_registry.registry.quotas import check, check_write_rate, usage_report
from skills_registry.registry.semver import clip, is_version
from skills_registry.registry.storage import STATUSES, MetadataStore, token_live
from skills_registry.registry.store_rules import check_precedence_free, lookalike_refusal


def _bearer(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("a bearer token is required")
    return token.strip()


def authenticate(request: Request) -> dict[str, Any]:
    """The live token record behind the request's bearer token."""
    record = registry_of(request).store.get_token(_bearer(request))
    if record is None:
        raise Unauthorized("the token is not known to this registry")
    if record["revokedAt"]:
        raise Unauthorized(f"token {record['id']} was revoked at {record['revokedAt']}")
    if not token_live(record):
        raise Unauthorized(f"token {record['id']} expired at {record['expiresAt']}")
    refusal = namespace_refusal(str(record["namespace"]))
    if refusal is not None:  # issued before the rules held: it authenticates nothing
        raise Unauthorized(
            f"token {record['id']} cannot authenticate: its {refusal}",
            hint="issue a token for a valid namespace (kiln registry token --namespace NS)",
        )
    return record


def authorize(request: Request, namespace: str, scope: str) -> dict[str, Any]:
    record = authenticate(request)
    if record["namespace"] != namespace:
        raise Forbidden(
            f"the token is scoped to namespace {record['namespace']!r}, not {namespace!r}",
            hint=f"publish as {record['namespace']}/<name> or get a token for {namespace!r}",
        )
    if scope not in record["scopes"]:
        raise Forbidden(
            f"token {record['id']} ({record['label'] or 'no label'}) lacks the {scope!r} scope",
            hint=f"its scopes are {', '.join(record['scopes'])}",
        )
    return record


def check_version_free(store: MetadataStore, skill_id: str, version: str) -> None:
    """409 for a taken version, or one equal to it but for build metadata (1.0.0+b5 vs 1.0.0)."""
    if store.get_version(skill_id, version) is not None:
        raise Conflict(f"{skill_id}@{version} is already published")
    if not is_version(version):  # strict: Version.parse forgives spaces around the text
        return  # build_release lists the bad version with every other problem
    if store.get_skill(skill_id) is None:
        return
    check_precedence_free(skill_id, version, [row["version"] for row in store.versions(skill_id)])


def check_quotas(reg: Registry, skill_id: str, size: int) -> None:
    """The quotas as they stand, before an upload is read and before its blob is written; the
    store counts again in the transaction that inserts (``quotas``)."""
    check(reg.quotas, reg.store.quota_usage(skill_id), skill_id, size)


def check_not_lookalike(store: MetadataStore, skill_id: str) -> None:
    """A new skill may not read like an existing one: ``evil/dep1oy`` or ``evil/dep-loy``
    beside ``acme/deploy``, ``anthr0pic/pdf`` beside ``anthropic/pdf``, ``rnail`` beside ``mail``
    (``store_rules.lookalike_key``). Installed, both are a folder and a catalog
    entry a person (or a model) reads as the other. New versions of a skill are not checked.
    This early check spares the upload; the store checks again in the transaction that
    creates the skill, so two look-alike first publishes racing each other cannot both land."""
    if store.get_skill(skill_id) is not None:
        return
    other = store.lookalike(skill_id)
    if other is not None:
        raise lookalike_refusal(skill_id, other)


MAX_REASON_CHARS = 500  # a yank reason or deprecation message: one line a client prints


def write_rate(reg: Registry, namespace: str) -> None:
    """A yank, deprecation or dist-tag change past the namespace's hourly write rate: a 429."""
    newest_at = reg.store.audit_time(namespace, reg.quotas.writes_per_hour)
    check_write_rate(reg.quotas, newest_at, namespace)


def _check_length(field: str, text: str | None) -> None:
    """A 422 for text the stores would keep only the first 500 characters of."""
    if text is not None and len(text) > MAX_REASON_CHARS:
        raise ValidationFailed(
            [f"'{field}' is {len(text)} characters; the limit is {MAX_REASON_CHARS}"]
        )


async def publish(request: Request) -> Response:
    reg = registry_of(request)
    skill_id = skill_id_of(request)
    version = request.path_params["version"]
    namespace, _ = check_id(skill_id)
    token = authorize(request, namespace, "publish")
    if not is_version(version):  # before the body: a malformed version needs no 8 MB upload
        raise ValidationFailed([f"invalid version {clip(version)}: use exact SemVer such as 1.2.3"])
    await run_in_threadpool(check_version_free, reg.store, skill_id, version)
    await run_in_threadpool(check_not_lookalike, reg.store, skill_id)
    declared = request.headers.get("content-length", "")
    size = int(declared) if declared.isdigit() else 0
    if size > MAX_ARCHIVE_BYTES:  # the archive cap first: no quota raise would let it in
        raise TooLarge(f"request body is {size} bytes; the limit is {MAX_ARCHIVE_BYTES}")
    await run_in_threadpool(check_quotas, reg, skill_id, size)
    body = await read_body(request, MAX_ARCHIVE_BYTES)
    doc = await run_in_threadpool(build_release, skill_id, version, body, reg.signer)
    await run_in_threadpool(check_version_free, reg.store, skill_id, version)
    await run_in_threadpool(check_quotas, reg, skill_id, len(body))
    await run_in_threadpool(reg.blobs.put, body)
    # A refusal here (another instance's publish took the room since the check above) leaves
    # the blob: archives hold no namespace, so another namespace's publish of the same folder
    # may have just stored the same bytes and not yet written its row. `kiln registry sweep`
    # removes unreferenced archives once they are older than its grace period.
    await run_in_threadpool(reg.store.add_version, doc, reg.quotas)
    await run_in_threadpool(
        reg.store.record_audit,
        action="publish",
        skill_id=skill_id,
        version=version,
        sha256=doc["archiveSha256"],
        token=token,
    )
    stored = await run_in_threadpool(reg.version_doc, request)
    return json_response(
        stored, status=201, headers={"Location": f"/v1/skills/{skill_id}/versions/{version}"}
    )


async def set_status(request: Request) -> Response:
    reg = registry_of(request)
    skill_id = skill_id_of(request)
    token = authorize(request, request.path_params["namespace"], "yank")
    await run_in_threadpool(write_rate, reg, request.path_params["namespace"])
    data = await read_json(request, required=True)
    status = data.get("status")
    if status not in STATUSES:
        raise ValidationFailed([f"'status' must be one of {', '.join(STATUSES)}"])
    reason = data.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ValidationFailed(["'reason' must be a string (or left out)"])
    _check_length("reason", reason)
    version = request.path_params["version"]
    await run_in_threadpool(reg.store.set_status, skill_id, version, status, reason or "")
    doc = reg.version_doc(request)
    reg.store.record_audit(
        action=f"status:{status}",
        skill_id=skill_id,
        version=version,
        sha256=doc["archiveSha256"],
        token=token,
    )
    return json_response(doc)


async def set_deprecation(request: Request) -> Response:
    """``{"message": "..."}`` deprecates, ``{"message": null}`` un-deprecates; nothing else."""
    reg = registry_of(request)
    skill_id = skill_id_of(request)
    token = authorize(request, request.path_params["namespace"], "yank")
    await run_in_threadpool(write_rate, reg, request.path_params["namespace"])
    data = await read_json(request, required=True)
    if "message" not in data:
        raise ValidationFailed(
            ["'message' is required: a non-empty string to deprecate, or null to un-deprecate"]
        )
    message = data["message"]
    if message is not None and (not isinstance(message, str) or not message.strip()):
        raise ValidationFailed(["'message' must be a non-empty string (or null to un-deprecate)"])
    _check_length("message", message)
    await run_in_threadpool(reg.store.set_deprecation, skill_id, message)
    action = "deprecate" if message else "undeprecate"
    reg.store.record_audit(action=action, skill_id=skill_id, version=None, sha256=None, token=token)
    return json_response(reg.store.get_skill(skill_id))


async def set_dist_tag(request: Request) -> Response:
    reg = registry_of(request)
    skill_id = skill_id_of(request)
    token = authorize(request, request.path_params["namespace"], "tag")
    await run_in_threadpool(write_rate, reg, request.path_params["namespace"])
    version: str | None = None
    if request.method == "PUT":
        data = await read_json(request, required=True)
        if not isinstance(data.get("version"), str):
            raise ValidationFailed(["'version' must be a string"])
        version = data["version"]
    tag = request.path_params["tag"]
    if (refusal := dist_tag_refusal(tag)) is not None and (
        version is not None or tag not in (reg.store.get_skill(skill_id) or {}).get("distTags", {})
    ):  # refused before anything is read; one stored before the rule held can be removed
        raise InvalidDistTag(refusal, hint="name the tag like 'beta', 'next' or 'stable-2'")
    if version is None and tag == "latest":  # what `install ID` and search's latestVersion name
        raise Conflict(
            f"the 'latest' dist-tag of {skill_id} cannot be removed, only moved",
            hint='PUT {"version": "X.Y.Z"} to it, or yank the version it names',
        )
    await run_in_threadpool(reg.store.set_dist_tag, skill_id, tag, version)
    doc = reg.store.get_version(skill_id, version) if version else None
    reg.store.record_audit(
        action=f"dist-tag:{tag}",
        skill_id=skill_id,
        version=version,
        sha256=doc["archiveSha256"] if doc else None,
        token=token,
    )
    skill = reg.store.get_skill(skill_id) or {}
    return json_response({"distTags": skill.get("distTags", {})})


def whoami(request: Request) -> Response:
    record = authenticate(request)
    return json_response({**record, "namespace": record["namespace"]})


def list_tokens(request: Request) -> Response:
    record = authenticate(request)
    return json_response({"tokens": registry_of(request).store.list_tokens(record["namespace"])})


async def revoke_token(request: Request) -> Response:
    """Any live token of a namespace may revoke any token of it (a leak is an emergency)."""
    record = authenticate(request)
    store = registry_of(request).store
    revoked = await run_in_threadpool(
        store.revoke_token, request.path_params["token_id"], record["namespace"]
    )
    return json_response(revoked)


def audit_log(request: Request) -> Response:
    record = authenticate(request)
    rows = registry_of(request).store.audit_log(
        record["namespace"],
        int_param(request, "since", 0, minimum=0),
        int_param(request, "limit", 100),
    )
    return json_response(
        {"audit": rows, "metadata": {"nextSince": rows[-1]["seq"] if rows else None}}
    )


def namespace_usage(request: Request) -> Response:
    """How close the namespace is to each quota; for its own tokens only (any scope), since
    its skills' sizes and publishing pace are its business."""
    namespace = request.path_params["namespace"]
    record = authenticate(request)
    if record["namespace"] != namespace:
        raise Forbidden(
            f"the token is scoped to namespace {record['namespace']!r}, not {namespace!r}",
            hint="a namespace's usage is readable with its own tokens only",
        )
    reg = registry_of(request)
    return json_response(usage_report(reg.quotas, reg.store.namespace_usage(namespace), namespace))


async def oidc_exchange(request: Request) -> Response:
    """``{"token": "<OIDC ID token>"}`` -> ``{"token", "namespace", "expiresAt"}``."""
    reg = registry_of(request)
    data = await read_json(request, required=True)
    id_token = data.get("token")
    if not isinstance(id_token, str) or not id_token:
        raise ValidationFailed(["'token' must be the CI provider's OIDC ID token"])
    minted = await run_in_threadpool(exchange, reg.store, reg.jwks, id_token, reg.audience)
    return json_response(minted, status=201)
