"""Trusted publishing: trade a CI provider's OIDC ID token for a short-lived publish token.

As on PyPI and npm, the operator registers a *trusted publisher* for a namespace (issuer,
repository, workflow file, optional environment); a CI job then proves who it is with the ID
token its provider signs, and no long-lived secret is stored in the CI. The ID token's
signature is checked against the issuer's JWKS (found through its OpenID discovery document),
with ``aud`` equal to this registry's audience, ``exp``/``iat`` required and each ``jti``
accepted once. Claims follow GitHub Actions: ``repository`` and ``job_workflow_ref``
(``owner/repo/.github/workflows/release.yml@refs/...``), ``environment`` when configured.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt

from skills_registry.registry.errors import Forbidden, RegistryUnavailable, Unauthorized
from skills_registry.registry.storage import MetadataStore

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
    publisher = next((p for p in candidates if _matches(p, claims)), None)
    if publisher is None:
        raise Forbidden(
            f"no trusted publisher matches repository {claims.get('repository')!r} "
            f"workflow {claims.get('job_workflow_ref') or claims.get('workflow_ref')!r}"
        )
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
