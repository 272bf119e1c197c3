"""A namespace's yanks, deprecations and dist-tag changes are rate-limited, on each backend pair.

Each costs its token one small request (hundreds a second) and adds a change-feed row and an
audit row for good, so a token moving a dist-tag back and forth filled the database without
end: the publish quotas bound publishes only. Now a namespace whose audit log holds
`writesPerHour` entries (publishes included) of the last hour gets a 429 `rate_limited` with
`Retry-After` for the next such write, and the CLI says so in one line; a token revocation is
never refused (a leak is an emergency), and other namespaces are not affected.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from skills_registry.registry.app import create_app
from skills_registry.registry.quotas import Quotas
from tests.registry.conftest import (
    BACKENDS,
    backend_urls,
    cli_env,
    fails,
    kiln,
    make_skill,
    ok,
    publish_skill,
    serving,
    start_registry,
)


@pytest.mark.parametrize("kind", BACKENDS)
def test_metadata_writes_past_the_hourly_rate_are_refused(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "registry-data"
    db, blobs = backend_urls(kind, data, request)
    app = create_app(data, db=db, blobs=blobs, quotas=Quotas(writes_per_hour=5))
    live = start_registry(data, app)
    try:
        folder = make_skill(tmp_path / "src", "tags")
        publish_skill(live, folder, "1.0.0")  # one audit entry
        publish_skill(live, folder, "1.0.0", namespace="other")
        token = live.token("acme")
        base = f"{live.url}/v1/skills/acme/tags"
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as c:
            for _ in range(2):  # four more: five in the hour
                assert c.put(f"{base}/dist-tags/beta", json={"version": "1.0.0"}).is_success
                assert c.delete(f"{base}/dist-tags/beta").is_success
            for method, path, body in [
                ("PUT", "/dist-tags/beta", {"version": "1.0.0"}),
                ("PUT", "/versions/1.0.0/status", {"status": "yanked", "reason": "x"}),
                ("PUT", "/deprecation", {"message": "old"}),
            ]:
                refused = c.request(method, base + path, json=body)
                assert refused.status_code == 429, (path, refused.text)
                error = refused.json()["error"]
                assert error["code"] == "rate_limited", error
                assert error["message"] == (
                    "namespace 'acme' made 5 writes in the last hour; the limit (writesPerHour) "
                    "is 5"
                ), error
                assert 3500 <= int(refused.headers["Retry-After"]) <= 3600
            skill = c.get(base).json()
            assert skill["distTags"] == {"latest": "1.0.0"} and not skill["deprecated"]
            assert c.get(f"{base}/versions/1.0.0").json()["status"] == "active"
            changes = c.get(f"{live.url}/v1/changes", params={"limit": 1000}).json()["changes"]
            assert len(changes) == 6  # two publishes, four tag changes: nothing refused wrote
            spare = {"Authorization": f"Bearer {live.token('acme')}"}  # revoking is never refused
            spare_id = httpx.get(f"{live.url}/v1/whoami", headers=spare).json()["id"]
            assert c.delete(f"{live.url}/v1/tokens/{spare_id}").is_success
            assert httpx.get(f"{live.url}/v1/whoami", headers=spare).status_code == 401
        other = httpx.put(f"{live.url}/v1/skills/other/tags/dist-tags/beta",
                          headers={"Authorization": f"Bearer {live.token('other')}"},
                          json={"version": "1.0.0"})  # fmt: skip
        assert other.is_success, other.text

        yank = kiln("skills", "yank", "acme/tags@1.0.0", "--reason", "x", "--token", token,
                    "--registry", live.url, env=cli_env(tmp_path / "home"), cwd=tmp_path)  # fmt: skip
        assert yank.returncode == 5 and yank.stdout == "", yank
        lines = yank.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            "kiln: namespace 'acme' made 5 writes in the last hour; the limit (writesPerHour) is 5"
        ), yank.stderr
    finally:
        live.stop()
        close = getattr(app.state.registry.store, "close", None)
        if close is not None:
            close()


def test_the_write_rate_is_set_like_the_other_quotas_and_listed_with_them(tmp_path: Path) -> None:
    """`writes_per_hour` could only be set in code: `--writes-per-hour` (or
    KILN_REGISTRY_WRITES_PER_HOUR) sets it for `serve` and `usage`, and the registry lists it
    under `limits` and in a namespace's usage report like the other quotas."""
    data, home = tmp_path / "data", tmp_path / "home"
    env = cli_env(home)
    token = ok(kiln("registry", "token", "--data", str(data), "--namespace", "acme", env=env,
                    cwd=tmp_path)).strip()  # fmt: skip
    folder = make_skill(tmp_path / "src", "tags")
    with serving(data, home, "--writes-per-hour", "2") as port:
        url = f"http://127.0.0.1:{port}"
        ok(kiln("skills", "publish", str(folder), "--registry", url, "--token", token,
                "--version", "1.0.0", env=env, cwd=tmp_path))  # fmt: skip
        base = f"{url}/v1/skills/acme/tags/dist-tags/beta"
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as c:
            assert c.put(base, json={"version": "1.0.0"}).is_success  # the second write
            refused = c.put(base, json={"version": "1.0.0"})
            assert refused.status_code == 429, refused.text
            assert "the limit (writesPerHour) is 2" in refused.json()["error"]["message"]
            usage = c.get(f"{url}/v1/namespaces/acme/usage").json()
        limits = httpx.get(f"{url}/.well-known/kiln-registry.json").json()["limits"]
        assert limits["writesPerHour"] == 2
        assert usage["writesPerHour"] == {"used": 2, "limit": 2}
        shown = ok(kiln("skills", "usage", "--registry", url, "--token", token, env=env,
                        cwd=tmp_path))  # fmt: skip
        assert "writes per hour    2 of 2 (in the last hour)" in shown, shown
    operator = ok(kiln("registry", "usage", "acme", "--data", str(data),
                       env=cli_env(home, KILN_REGISTRY_WRITES_PER_HOUR="3"), cwd=tmp_path))  # fmt: skip
    assert "writes per hour    2 of 3 (in the last hour)" in operator, operator
    bad = kiln("registry", "serve", "--port", "0", "--data", str(data),
               env=cli_env(home, KILN_REGISTRY_WRITES_PER_HOUR="0"), cwd=tmp_path)  # fmt: skip
    fails(bad, 2, "Invalid value for KILN_REGISTRY_WRITES_PER_HOUR (read for --")
