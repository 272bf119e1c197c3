"""Trusted publishing: trade a CI provider's OIDC ID token for a short-lived publish token.

As on PyPI and npm, the operator registers a *trusted publisher* for a namespace (issuer,
repository, workflow file, optional environment); a CI job then proves who it is with the ID
token its provider signs, and no long-lived secret is stored in the CI. The ID token's
signature is checked against the issuer's JWKS (found through its OpenID discovery document),
with ``aud`` equal to this registry's audience, ``exp``/``iat`` required and each ``jti``
accepted once. Claims follow GitHub Actions: ``repository`` and ``job_workflow_ref``
(``owner/repo/.github/workflows/release.yml@refs/...``), ``environment`` when configured, and
the stable ``repository_id`` and ``repository_owner_id``: given at registration or recorded
from the first matching token, they must match ever after, so a repository deleted and created
again under its name by someone else is not trusted.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import jwt

from skills_registry.registry.errors import Forbidden, RegistryUnavailable, Unauthorized
from skills_registry.registry.storage import MetadataStore

if TYPE_CHECKING:  # imported when keys are fetched (see skills_registry.client_answers)
    import httpx

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
TOKEN_MINUTES = 15
_JWKS_SECONDS = 300
# An unknown ``kid`` refetches the JWKS at most this often: anyone can send ID tokens with
# made-up ``kid``s, and each refetch is two requests to the issuer from this server.
_REFETCH_SECONDS = 60
_ALGORITHMS = ["RS256", "ES256"]


class JwksCache:
    """The issuers' signing keys, refetched after five minutes, or on an unknown ``kid`` when
    the copy is older than a minute."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self._keys: dict[str, tuple[float, jwt.PyJWKSet]] = {}
        self._transport = transport

    def _fetch(self, issuer: str) -> jwt.PyJWKSet:
        import httpx

        try:
            with httpx.Client(timeout=10, transport=self._transport) as http:
                config = http.get(f"{issuer}/.well-known/openid-configuration")
                config.raise_for_status()
                jwks = http.get(str(config.json()["jwks_uri"]))
                jwks.raise_for_status()
                keys = jwt.PyJWKSet.from_dict(jwks.json())
        except (httpx.HTTPError, KeyError, ValueError, jwt.PyJWTError) as exc:
            raise RegistryUnavailable(f"cannot fetch the signing keys of {issuer}: {exc}") from None
        self._keys[issuer] = (time.monotonic(), keys)
        return keys

    def key(self, issuer: str, kid: str | None) -> Any:
        cached = self._keys.get(issuer)
        fresh = cached is not None and time.monotonic() - cached[0] < _JWKS_SECONDS
        keys = cached[1] if cached is not None and fresh else self._fetch(issuer)
        found = _find(keys, kid)
        if found is None and time.monotonic() - self._keys[issuer][0] >= _REFETCH_SECONDS:
            found = _find(self._fetch(issuer), kid)  # rotated keys: refetch, at most this often
        if found is None:
            raise Unauthorized(f"the ID token's key {kid!r} is not published by {issuer}")
        return found


def _find(keys: jwt.PyJWKSet, kid: str | None) -> Any:
    return next((k.key for k in keys.keys if kid is None or k.key_id == kid), None)


def _matches(publisher: dict[str, Any], claims: dict[str, Any]) -> bool:
    if claims.get("repository") != publisher["repository"]:
        return False
    ref = str(claims.get("job_workflow_ref") or claims.get("workflow_ref") or "")
    if ref.partition("@")[0] != f"{publisher['repository']}/{publisher['workflow']}":
        return False
    return not publisher["environment"] or claims.get("environment") == publisher["environment"]


# A name can be deleted and taken again by someone else; these ids cannot.
_ID_CLAIMS = (("repositoryId", "repository_id"), ("ownerId", "repository_owner_id"))


def _id_mismatch(publisher: dict[str, Any], claims: dict[str, Any]) -> str | None:
    """Why the token's stable ids are not the publisher's, or None when they agree."""
    for field, claim in _ID_CLAIMS:
        want, got = publisher[field], str(claims.get(claim) or "")
        if want and got != want:
            return (
                f"{claim} {got or '(missing)'} is not the {want} trusted for "
                f"{publisher['repository']} (a repository created again under the same name "
                "is another repository)"
            )
    return None


def _trusted(
    store: MetadataStore, candidates: list[dict[str, Any]], claims: dict[str, Any]
) -> dict[str, Any]:
    """The publisher the claims match by name and stable ids; ids not recorded yet are
    recorded from this first matching token."""
    matching = [p for p in candidates if _matches(p, claims)]
    if not matching:
        raise Forbidden(
            f"no trusted publisher matches repository {claims.get('repository')!r} "
            f"workflow {claims.get('job_workflow_ref') or claims.get('workflow_ref')!r}"
        )
    publisher = next((p for p in matching if _id_mismatch(p, claims) is None), None)
    if publisher is None:
        raise Forbidden(str(_id_mismatch(matching[0], claims)))
    ids = [str(claims.get(claim) or "") for _, claim in _ID_CLAIMS]
    if not any(publisher[field] for field, _ in _ID_CLAIMS) and any(ids):
        publisher = store.pin_trusted_publisher(publisher["id"], *ids)
        mismatch = _id_mismatch(publisher, claims)  # another token pinned it first
        if mismatch:
            raise Forbidden(mismatch)
    return publisher


def exchange(store: MetadataStore, jwks: JwksCache, id_token: str, audience: str) -> dict[str, Any]:
    """Verify ``id_token`` and mint a publish token for the namespace it is trusted for."""
    try:
        unverified = jwt.decode(id_token, options={"verify_signature": False})
        header = jwt.get_unverified_header(id_token)
    except jwt.PyJWTError as exc:
        raise Unauthorized(f"not an OIDC ID token: {exc}") from None
    issuer = str(unverified.get("iss") or "").rstrip("/")
    candidates = [p for p in store.trusted_publishers() if p["issuer"] == issuer]
    if not candidates:
        raise Forbidden(
            f"no trusted publisher is registered for issuer {issuer!r}",
            hint="the operator adds one with `kiln registry trusted-publisher add`",
        )
    try:
        claims = jwt.decode(
            id_token,
            jwks.key(issuer, header.get("kid")),
            algorithms=_ALGORITHMS,
            audience=audience,
            issuer=issuer,
            options={"require": ["exp", "iat", "iss", "aud"]},
            leeway=30,
        )
    except jwt.PyJWTError as exc:
        raise Unauthorized(f"the ID token is not valid: {exc}") from None
    publisher = _trusted(store, candidates, claims)
    jti = str(claims.get("jti") or "")
    expires = datetime.fromtimestamp(int(claims["exp"]), UTC).isoformat()
    if not jti or not store.claim_jti(issuer, jti, expires):
        raise Unauthorized("the ID token was already used (or has no jti)")
    until = (datetime.now(UTC) + timedelta(minutes=TOKEN_MINUTES)).isoformat()
    run = claims.get("run_id")
    label = f"oidc {claims['repository']} {publisher['workflow']}" + (f" run {run}" if run else "")
    token = store.create_token(
        publisher["namespace"], label=label[:100], scopes=["publish"], expires_at=until
    )
    record = store.get_token(token) or {}
    return {
        "token": token,
        "namespace": publisher["namespace"],
        "expiresAt": record.get("expiresAt"),
    }
