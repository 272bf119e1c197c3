"""The pinned-key check: the key a registry serves, against the one this machine pinned."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skills_registry.local_state import TrustStore, unpinned
from skills_registry.registry.errors import RegistryUnavailable

if TYPE_CHECKING:
    from skills_registry.client import RegistryClient


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
        keys = client.info().get("keys")
    except RegistryUnavailable:
        if pinned is None:
            raise
        return pinned
    return trust.check(client.base_url, keys, first_use=first_use)
