"""The registry client: typed HTTP calls to one registry (the pinned-key check on them is
``skills_registry.pinned_key``, re-exported here).

The local state that makes installs trustworthy (tokens, pinned keys, the verified cache under
``$KILN_HOME``) is ``skills_registry.local_state``; its names are re-exported here for callers.
Verified resolution is ``skills_registry.verified``; placing files is ``skills_registry.install``.
Reading an answer (under a byte cap, errors as one line) is ``skills_registry.client_answers``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from skills_registry.answers import (
    AUDIT_ROW,
    MINTED,
    RECEIPT,
    SEARCH_ROW,
    TOKEN_ROW,
    namespace_usage,
    rows,
    shaped,
)
from skills_registry.archive import MAX_ARCHIVE_BYTES, MAX_FILE_BYTES
from skills_registry.client_answers import json_object, raise_for, read_capped
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
from skills_registry.pinned_key import trusted_key
from skills_registry.redirects import REDIRECTS, origin, printable, redirect_target
from skills_registry.registry.errors import (
    BadResponse,
    InvalidDistTag,
    NoRegistry,
    RegistryUnavailable,
    UsageError,
)
from skills_registry.registry.id_rules import dist_tag_refusal
from skills_registry.request_deadline import (
    Attempt,
    Connections,
    Unfinished,
    Unreached,
    deadline_from_env,
    within,
)
from skills_registry.skill_spec import parse_spec

if TYPE_CHECKING:  # httpx is imported where a request is made (client_answers.read_capped)
    import httpx

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
    "printable",
    "save_token",
    "trusted_key",
    "unpinned",
]

# What a registry ever sends: JSON documents (a version document lists up to 1,000 files and
# 64 tool schemas), archives and previews under the archive limits. Anything larger, from a
# hostile registry or proxy, is cut off while it streams, not after it filled the memory.
MAX_JSON_RESPONSE_BYTES = 16 * 1024 * 1024
MAX_REDIRECTS = 3  # archive downloads only: a presigned bucket URL or a CDN in front of one


class RegistryClient:
    """Thin, typed calls to one registry; HTTP failures become ``RegistryError`` subclasses."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        deadline: float | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """``timeout`` bounds each network wait; ``deadline`` a whole request (name resolution,
        connect, headers and body; default ``KILN_REGISTRY_DEADLINE``, else 5 minutes), so
        neither a slow resolver nor a registry that trickles a byte at a time can hold an
        install."""
        self.base_url = normalize_url(base_url)
        self._deadline = deadline if deadline is not None else deadline_from_env()
        self._connections = Connections()  # shut down when a request's deadline passes
        # Set once any HTTP answer arrived: the registry is online, so a failure after that is
        # the registry's (or a mirror's) choice, not the network's (see ``verified``).
        self.answered = False
        # Uncompressed answers only: httpx would inflate any encoding a server names, each
        # layer of ``gzip, gzip`` in one call, before the caps below see a byte.
        headers = {
            "User-Agent": "kiln-skills/1",
            "Accept": "application/json",
            "Accept-Encoding": "identity",
        }
        # Sent only to the registry's own origin, never to a host a redirect names.
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        import httpx  # here, not at import: see client_answers.read_capped

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

    def _send(
        self,
        method: str,
        url: str | httpx.URL,
        cap: int,
        stop: float | None = None,
        *,
        as_sent: bool = False,
        **kwargs: Any,
    ) -> httpx.Response:
        """One request whose body is read under ``cap`` bytes; the token goes to our origin only.
        It ends by ``stop`` (a ``time.monotonic()`` value; default: the deadline from now),
        name resolution included (``request_deadline``). The bytes are never inflated: an
        answer naming a ``Content-Encoding`` is refused, unless ``as_sent`` (an archive,
        checked against its signed sha256 as the bytes came)."""
        # A str is a path under the registry (httpx keeps a base path such as /registry/);
        # an absolute URL comes from a redirect and gets the token only on our own origin.
        if isinstance(url, str) or origin(url) == origin(self._http.base_url):
            kwargs["headers"] = {**self._auth, **kwargs.get("headers", {})}
        import httpx  # loaded by __init__ already

        if stop is None:
            stop = time.monotonic() + self._deadline
        target = self._http.build_request(method, url, **kwargs)

        def exchange(attempt: Attempt) -> httpx.Response:
            target.extensions = {**target.extensions, "trace": attempt.trace}
            response = self._http.send(target, stream=True)
            try:
                return self._read(response, cap, as_sent)
            finally:
                response.close()

        try:
            return within(stop - time.monotonic(), self._connections, exchange)
        except Unreached:
            raise RegistryUnavailable(
                f"cannot reach registry {self.base_url}: no connection to "
                f"{printable(target.url.host, 80)} within {self._deadline:g}s"
            ) from None
        except Unfinished:
            raise BadResponse(
                f"registry {self.base_url} did not finish sending {target.url.path} "
                f"within {self._deadline:g}s"
            ) from None
        except httpx.HTTPError as exc:
            raise RegistryUnavailable(f"cannot reach registry {self.base_url}: {exc}") from None

    def _read(self, response: httpx.Response, cap: int, as_sent: bool) -> httpx.Response:
        self.answered = True
        return read_capped(response, cap, as_sent, self.base_url)

    def _request(
        self, method: str, path: str, *, cap: int = MAX_JSON_RESPONSE_BYTES, **kwargs: Any
    ) -> httpx.Response:
        return self._raise_for(self._send(method, path, cap, **kwargs))

    def _raise_for(self, response: httpx.Response) -> httpx.Response:
        return raise_for(response, self.base_url)

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        return json_object(response, self.base_url)

    def _get(self, path: str, **params: Any) -> dict[str, Any]:
        return self._json(self._request("GET", path, params={k: v for k, v in params.items() if v}))

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
        answer = self._get(
            "/v1/skills",
            q=query,
            limit=limit,
            cursor=cursor,
            namespace=namespace,
            updated_since=updated_since,
        )
        rows(answer, "skills", SEARCH_ROW, self._where("/v1/skills"))
        return answer

    def skill(self, skill_id: str) -> dict[str, Any]:
        return self._get(self._skill_path(skill_id))

    def metadata(self, skill_id: str) -> dict[str, Any]:
        """The signed envelope ``{signed, signatures}``; verify with ``verified.check_metadata``."""
        return self._get(f"{self._skill_path(skill_id)}/metadata")

    def version(self, skill_id: str, version: str) -> dict[str, Any]:
        return self._get(f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}")

    def download(self, skill_id: str, version: str) -> bytes:
        """The archive bytes, following up to ``MAX_REDIRECTS`` redirects (a registry may send
        downloads to a bucket or CDN): http(s) only, never from https down to http, and the
        token never leaves the registry's origin. The caller verifies the bytes' sha256. One
        deadline covers the download and its redirects together."""
        url: str | httpx.URL = (
            f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}/archive"
        )
        stop = time.monotonic() + self._deadline
        for _ in range(MAX_REDIRECTS + 1):
            response = self._send("GET", url, MAX_ARCHIVE_BYTES, stop, as_sent=True)
            if response.status_code not in REDIRECTS:
                return self._raise_for(response).content
            url = redirect_target(
                self.base_url, response.request.url, response.headers.get("location", "")
            )
        raise BadResponse(
            f"registry {self.base_url} redirected the download more than {MAX_REDIRECTS} times"
        )

    def file(self, skill_id: str, version: str, path: str) -> bytes:
        url = f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}/files/{quote(path)}"
        return self._request("GET", url, cap=MAX_FILE_BYTES).content

    def tools(self, skill_id: str, version: str) -> list[dict[str, Any]]:
        tools = self._get(f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}/tools")
        listed = tools.get("tools")
        return [t for t in listed if isinstance(t, dict)] if isinstance(listed, list) else []

    def _where(self, path: str) -> str:
        return f"registry {self.base_url} answered {path} with something unexpected"

    def whoami(self) -> str:
        answer = shaped(self._get("/v1/whoami"), {"namespace": (str,)}, self._where("/v1/whoami"))
        return str(answer["namespace"])

    def tokens(self) -> list[dict[str, Any]]:
        return rows(self._get("/v1/tokens"), "tokens", TOKEN_ROW, self._where("/v1/tokens"))

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        path = f"/v1/tokens/{quote(token_id, safe='')}"
        return shaped(self._json(self._request("DELETE", path)), TOKEN_ROW, self._where(path))

    def audit(self, since: int = 0) -> list[dict[str, Any]]:
        answer = self._get("/v1/audit", since=since, limit=1000)
        return rows(answer, "audit", AUDIT_ROW, self._where("/v1/audit"))

    def usage(self, namespace: str) -> dict[str, Any]:
        """How close ``namespace`` is to each quota (its own token only)."""
        path = f"/v1/namespaces/{quote(namespace, safe='')}/usage"
        return namespace_usage(self._get(path), self._where(path))

    def exchange_oidc(self, id_token: str) -> dict[str, Any]:
        """Trade a CI OIDC ID token for a short-lived publish token (trusted publishing)."""
        answer = self._json(self._request("POST", "/v1/oidc/token", json={"token": id_token}))
        return shaped(answer, MINTED, self._where("/v1/oidc/token"))

    def publish(self, skill_id: str, version: str, archive: bytes) -> dict[str, Any]:
        path = f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}"
        response = self._request(
            "PUT", path, content=archive, headers={"Content-Type": "application/gzip"}
        )
        return shaped(self._json(response), RECEIPT, self._where(path))

    def set_status(
        self, skill_id: str, version: str, status: str, reason: str = ""
    ) -> dict[str, Any]:
        url = f"{self._skill_path(skill_id)}/versions/{quote(version, safe='')}/status"
        answer = self._json(self._request("PUT", url, json={"status": status, "reason": reason}))
        return shaped(answer, {**RECEIPT, "status": (str,)}, self._where(url))

    def deprecate(self, skill_id: str, message: str | None) -> dict[str, Any]:
        return self._json(
            self._request(
                "PUT", f"{self._skill_path(skill_id)}/deprecation", json={"message": message}
            )
        )

    def set_dist_tag(self, skill_id: str, tag: str, version: str) -> dict[str, Any]:
        if (refusal := dist_tag_refusal(tag)) is not None:  # the registry's rule: not asked
            raise InvalidDistTag(refusal, hint="name the tag like 'beta', 'next' or 'stable-2'")
        return self._json(
            self._request(
                "PUT",
                f"{self._skill_path(skill_id)}/dist-tags/{quote(tag)}",
                json={"version": version},
            )
        )
