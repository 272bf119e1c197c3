"""The registry client: typed HTTP calls to one registry, and the pinned-key check on them.

The local state that makes installs trustworthy (tokens, pinned keys, the verified cache under
``$KILN_HOME``) is ``skills_registry.local_state``; its names are re-exported here for callers.
Verified resolution is ``skills_registry.verified``; placing files is ``skills_registry.install``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import httpx

from skills_registry.local_state import (
    Cache,
    TrustStore,
    default_registry,
    kiln_home,
    load_token,
    normalize_url,
    save_token,
    unpinned,
)
from skills_registry.registry.errors import (
    Conflict,
    Forbidden,
    NoRegistry,
    NotFound,
    RegistryError,
    RegistryUnavailable,
    TooLarge,
    Unauthorized,
    UsageError,
    ValidationFailed,
)

# Re-exported: callers import the local state and the errors they catch from here.
__all__ = [
    "Cache",
    "NoRegistry",
    "RegistryClient",
    "TrustStore",
    "default_registry",
    "kiln_home",
    "load_token",
    "normalize_url",
    "parse_spec",
    "save_token",
    "trusted_key",
    "unpinned",
]

_BY_STATUS: dict[int, type[RegistryError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
}


class RegistryClient:
    """Thin, typed calls to one registry; HTTP failures become ``RegistryError`` subclasses."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = normalize_url(base_url)
        headers = {"User-Agent": "kiln-skills/1", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise RegistryUnavailable(f"cannot reach registry {self.base_url}: {exc}") from None
        if response.status_code < 400:
            return response
        try:
            body = response.json()
            error = body.get("error", {})
            message, hint = (
                str(error.get("message") or response.reason_phrase),
                str(error.get("hint") or ""),
            )
        except (ValueError, AttributeError):
            body, message, hint = {}, f"HTTP {response.status_code} {response.reason_phrase}", ""
        if response.status_code == 422:
            raise ValidationFailed(list(body.get("errors") or [message]), hint=hint or None)
        if response.status_code >= 500:
            raise RegistryUnavailable(f"registry {self.base_url} failed: {message}")
        cls = _BY_STATUS.get(response.status_code, UsageError)
        raise cls(message, hint=hint or None)

    def _get(self, path: str, **params: Any) -> dict[str, Any]:
        data: dict[str, Any] = self._request(
            "GET", path, params={k: v for k, v in params.items() if v}
        ).json()
        return data

    @staticmethod
    def _skill_path(skill_id: str) -> str:
        namespace, _, name = skill_id.partition("/")
        if not namespace or not name or "/" in name:
            raise UsageError(f"invalid skill id {skill_id!r}", hint="use <namespace>/<name>")
        return f"/v1/skills/{quote(namespace, safe='')}/{quote(name, safe='')}"

    def info(self) -> dict[str, Any]:
        return self._get("/.well-known/kiln-registry.json")

    def search(
        self,
        query: str = "",
        *,
        limit: int = 20,
        cursor: str | None = None,
        namespace: str | None = None,
        updated_since: str | None = None,
    ) -> dict[str, Any]:
        return self._get(
            "/v1/skills",
            q=query,
            limit=limit,
            cursor=cursor,
            namespace=namespace,
            updated_since=updated_since,
        )

    def skill(self, skill_id: str) -> dict[str, Any]:
        return self._get(self._skill_path(skill_id))

    def metadata(self, skill_id: str) -> dict[str, Any]:
        """The signed envelope ``{signed, signatures}``; verify with ``verified.check_metadata``."""
        return self._get(f"{self._skill_path(skill_id)}/metadata")

    def version(self, skill_id: str, version: str) -> dict[str, Any]:
        return self._get(f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}")

    def download(self, skill_id: str, version: str) -> bytes:
        return self._request(
            "GET", f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}/archive"
        ).content

    def file(self, skill_id: str, version: str, path: str) -> bytes:
        url = f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}/files/{quote(path)}"
        return self._request("GET", url).content

    def tools(self, skill_id: str, version: str) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = self._get(
            f"{self._skill_path(skill_id)}/versions/{version}/tools"
        )["tools"]
        return tools

    def whoami(self) -> str:
        return str(self._get("/v1/whoami")["namespace"])

    def tokens(self) -> list[dict[str, Any]]:
        return list(self._get("/v1/tokens")["tokens"])

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        return dict(self._request("DELETE", f"/v1/tokens/{quote(token_id, safe='')}").json())

    def audit(self, since: int = 0) -> list[dict[str, Any]]:
        return list(self._get("/v1/audit", since=since, limit=1000)["audit"])

    def exchange_oidc(self, id_token: str) -> dict[str, Any]:
        """Trade a CI OIDC ID token for a short-lived publish token (trusted publishing)."""
        data: dict[str, Any] = self._request(
            "POST", "/v1/oidc/token", json={"token": id_token}
        ).json()
        return data

    def publish(self, skill_id: str, version: str, archive: bytes) -> dict[str, Any]:
        response = self._request(
            "PUT",
            f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}",
            content=archive,
            headers={"Content-Type": "application/gzip"},
        )
        data: dict[str, Any] = response.json()
        return data

    def set_status(
        self, skill_id: str, version: str, status: str, reason: str = ""
    ) -> dict[str, Any]:
        url = f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}/status"
        data: dict[str, Any] = self._request(
            "PUT", url, json={"status": status, "reason": reason}
        ).json()
        return data

    def deprecate(self, skill_id: str, message: str | None) -> dict[str, Any]:
        data: dict[str, Any] = self._request(
            "PUT", f"{self._skill_path(skill_id)}/deprecation", json={"message": message}
        ).json()
        return data

    def set_dist_tag(self, skill_id: str, tag: str, version: str) -> dict[str, Any]:
        data: dict[str, Any] = self._request(
            "PUT", f"{self._skill_path(skill_id)}/dist-tags/{quote(tag)}", json={"version": version}
        ).json()
        return data


def parse_spec(spec: str) -> tuple[str, str]:
    skill_id, _, wanted = spec.partition("@")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*", skill_id):
        raise UsageError(f"invalid skill id {skill_id!r}", hint="use <namespace>/<name>[@RANGE]")
    return skill_id, wanted or "*"


def trusted_key(
    client: RegistryClient, trust: TrustStore, *, first_use: bool = True
) -> dict[str, str]:
    """The pinned key for this registry, checked against the served one when online.

    ``first_use=False`` (frozen and CI installs) refuses a registry with no pinned key instead
    of trusting whatever key it serves.
    """
    pinned = trust.pinned(client.base_url)
    if pinned is None and not first_use:
        raise unpinned(client.base_url)
    try:
        keys = client.info().get("keys", [])
    except RegistryUnavailable:
        if pinned is None:
            raise
        return pinned
    return trust.check(client.base_url, keys, first_use=first_use)
