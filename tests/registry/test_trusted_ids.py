"""Trusted publishing matches a repository's stable id, not only its name, over real HTTP.

A repository deleted and re-created under the same name by someone else keeps the name but
gets a new `repository_id` (and, under another owner, a new `repository_owner_id`); GitHub
puts both in every ID token. The ids are given at `trusted-publisher add` or recorded from
the first ID token that matched, and every later token must carry the same.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.registry.conftest import LiveRegistry, cli_env, kiln, start_registry
from tests.registry.test_tokens import REPO, WORKFLOW, Issuer, issuer  # noqa: F401


def _exchange(reg: LiveRegistry, token: str) -> httpx.Response:
    return httpx.post(f"{reg.url}/v1/oidc/token", json={"token": token})


def test_ids_given_at_add_are_required(issuer: Issuer, tmp_path: Path) -> None:  # noqa: F811
    data, env = tmp_path / "data", cli_env(tmp_path / "home")
    added = kiln("registry", "trusted-publisher", "add", "--data", str(data),
                 "--namespace", "acme", "--repository", REPO, "--workflow", WORKFLOW,
                 "--issuer", issuer.url, "--repository-id", "123", "--owner-id", "9",
                 env=env, cwd=tmp_path)  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = kiln(
        "registry", "trusted-publisher", "list", "--data", str(data), env=env, cwd=tmp_path
    )
    assert "repository_id=123 owner_id=9" in listed.stdout, listed.stdout
    reg = start_registry(data)
    try:
        ok = _exchange(reg, issuer.id_token(repository_id="123", repository_owner_id="9"))
        assert ok.status_code == 201, ok.text
        recreated = _exchange(reg, issuer.id_token(repository_id="777", repository_owner_id="9"))
        assert recreated.status_code == 403, recreated.text
        assert "repository_id 777" in recreated.text and "123" in recreated.text
        other_owner = _exchange(reg, issuer.id_token(repository_id="123", repository_owner_id="8"))
        assert other_owner.status_code == 403, other_owner.text
        assert _exchange(reg, issuer.id_token()).status_code == 403  # no ids at all
    finally:
        reg.stop()


def test_ids_are_recorded_from_the_first_token(
    backend_registry: LiveRegistry,
    issuer: Issuer,  # noqa: F811
) -> None:
    store = backend_registry.app.state.registry.store  # type: ignore[attr-defined]
    store.add_trusted_publisher("acme", issuer.url, REPO, WORKFLOW)
    first = _exchange(
        backend_registry, issuer.id_token(repository_id="123", repository_owner_id="9")
    )
    assert first.status_code == 201, first.text
    [publisher] = store.trusted_publishers()
    assert (publisher["repositoryId"], publisher["ownerId"]) == ("123", "9")
    again = _exchange(
        backend_registry, issuer.id_token(repository_id="123", repository_owner_id="9")
    )
    assert again.status_code == 201, again.text
    recreated = _exchange(
        backend_registry, issuer.id_token(repository_id="777", repository_owner_id="5")
    )
    assert recreated.status_code == 403, recreated.text
    assert "repository_id 777" in recreated.text
