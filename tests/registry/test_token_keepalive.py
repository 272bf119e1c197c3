"""A token revoked by another process stops working on a connection already open (held).

The registry looks the bearer token up on every request, with no cache: a client that keeps
one keep-alive connection open cannot keep using a token the operator revoked meanwhile with
`kiln registry token revoke` (another process, writing the same SQLite file).
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.registry.conftest import LiveRegistry, cli_env, kiln


def test_revocation_reaches_an_open_keep_alive_connection(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    token = registry.token("acme")
    ports: set[int] = set()

    def trace(event: str, info: dict) -> None:  # which local port each request went out on
        if event == "connection.connect_tcp.complete":
            ports.add(info["return_value"].get_extra_info("socket").getsockname()[1])

    with httpx.Client(
        base_url=registry.url, headers={"Authorization": f"Bearer {token}"}
    ) as client:
        me = client.get("/v1/whoami", extensions={"trace": trace})
        assert me.status_code == 200
        revoked = kiln(
            "registry", "token", "revoke", me.json()["id"], "--data", str(registry.data),
            env=cli_env(tmp_path / "home"), cwd=tmp_path,
        )  # fmt: skip
        assert revoked.returncode == 0, revoked.stderr
        again = client.put(
            "/v1/skills/acme/notes/dist-tags/beta", json={"version": "1.0.0"},
            extensions={"trace": trace},
        )  # fmt: skip
    assert len(ports) == 1  # one connection carried both requests
    assert again.status_code == 401 and "revoked" in again.json()["error"]["message"]
