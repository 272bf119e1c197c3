"""The CI's OIDC identity, for trusted publishing: an ID token the CI provider signs.

``KILN_OIDC_TOKEN`` (any CI that can mint one) wins; otherwise GitHub Actions' endpoint
(``ACTIONS_ID_TOKEN_REQUEST_URL`` and ``ACTIONS_ID_TOKEN_REQUEST_TOKEN``, present when the job
has ``permissions: id-token: write``) is asked for a token with the registry's audience.
"""

from __future__ import annotations

import os

import httpx

from skills_registry.registry.errors import RegistryUnavailable


def ci_id_token(audience: str) -> str | None:
    """An OIDC ID token from the CI, if it offers one: ``KILN_OIDC_TOKEN``, else GitHub
    Actions' token endpoint (``ACTIONS_ID_TOKEN_REQUEST_URL``/``_TOKEN``, with ``id-token:
    write`` permission) asked for ``audience``."""
    raw = os.environ.get("KILN_OIDC_TOKEN")
    if raw:
        return raw.strip()
    url = os.environ.get("ACTIONS_ID_TOKEN_REQUEST_URL")
    bearer = os.environ.get("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
    if not url or not bearer:
        return None
    try:
        response = httpx.get(
            url,
            params={"audience": audience},
            headers={"Authorization": f"Bearer {bearer}"},
            timeout=30,
        )
        response.raise_for_status()
        return str(response.json()["value"])
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        raise RegistryUnavailable(f"cannot get an OIDC ID token from the CI: {exc}") from None
