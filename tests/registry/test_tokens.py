"""Token lifecycle, scopes, the audit log and OIDC trusted publishing, over real HTTP.

The OIDC issuer is a real server on 127.0.0.1 with an RSA key generated here: it serves an
OpenID discovery document, a JWKS and a GitHub-Actions-style token request endpoint.
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from skills_registry.archive import build_archive, read_dir
from skills_registry.registry.storage import token_id
from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill, start_registry

REPO, WORKFLOW = "acme/skills", ".github/workflows/release.yml"


def _b64(n: int) -> str:
    return (
        base64.urlsafe_b64encode(n.to_bytes((n.bit_length() + 7) // 8, "big")).rstrip(b"=").decode()
    )


class Issuer:
    """A local OIDC issuer: discovery, JWKS, and GitHub's ID-token request endpoint."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.url = ""
        self.request_bearer = secrets.token_hex(8)
        self.fetches = 0  # discovery documents served: each starts a JWKS fetch
        self.app = Starlette(
            routes=[
                Route("/.well-known/openid-configuration", self.discovery),
                Route("/jwks", self.jwks),
                Route("/request", self.request_token),
            ]
        )

    def discovery(self, request: Request) -> Response:
        self.fetches += 1
        return JSONResponse({"issuer": self.url, "jwks_uri": f"{self.url}/jwks"})

    def jwks(self, request: Request) -> Response:
        pub = self.key.public_key().public_numbers()
        jwk = {
            "kty": "RSA",
            "kid": "k1",
            "alg": "RS256",
            "use": "sig",
            "n": _b64(pub.n),
            "e": _b64(pub.e),
        }
        return JSONResponse({"keys": [jwk]})

    def request_token(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {self.request_bearer}":
            return JSONResponse({"message": "bad request token"}, status_code=401)
        return JSONResponse({"value": self.id_token(aud=request.query_params["audience"])})

    def id_token(self, key: Any = None, **overrides: Any) -> str:
        now = int(time.time())
        claims = {
            "iss": self.url,
            "aud": "kiln-registry",
            "sub": f"repo:{REPO}:ref:refs/heads/main",
            "repository": REPO,
            "job_workflow_ref": f"{REPO}/{WORKFLOW}@refs/heads/main",
            "run_id": "42",
            "jti": secrets.token_hex(8),
            "iat": now,
            "exp": now + 300,
            **overrides,
        }
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": "k1"})


@pytest.fixture
def issuer(tmp_path: Path) -> Iterator[Issuer]:
    issuer = Issuer()
    live = start_registry(tmp_path / "unused", app=issuer.app)
    issuer.url = live.url
    try:
        yield issuer
    finally:
        live.stop()


def _put(reg: LiveRegistry, token: str, name: str, version: str, folder: Path) -> httpx.Response:
    return httpx.put(
        f"{reg.url}/v1/skills/acme/{name}/versions/{version}",
        content=build_archive(read_dir(folder)),
        headers={"Authorization": f"Bearer {token}"},
    )


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_scopes_expiry_revocation_and_audit(registry: LiveRegistry, tmp_path: Path) -> None:
    store = registry.app.state.registry.store  # type: ignore[attr-defined]
    publisher = store.create_token("acme", label="release laptop", scopes=["publish"])
    admin = store.create_token("acme", label="maintainer", scopes=["yank", "tag"])
    expired = store.create_token("acme", label="old", expires_at="2001-01-01T00:00:00Z")
    folder = make_skill(tmp_path, "notes", description="Writes notes.")

    assert _put(registry, admin, "notes", "1.0.0", folder).status_code == 403  # no publish scope
    created = _put(registry, publisher, "notes", "1.0.0", folder)
    assert created.status_code == 201
    sha = created.json()["archiveSha256"]
    yank_url = f"{registry.url}/v1/skills/acme/notes/versions/1.0.0/status"
    denied = httpx.put(yank_url, json={"status": "yanked"}, headers=_auth(publisher))
    assert denied.status_code == 403 and "'yank' scope" in denied.json()["error"]["message"]
    assert (
        httpx.put(
            yank_url, json={"status": "yanked", "reason": "typo"}, headers=_auth(admin)
        ).status_code
        == 200
    )
    gone = _put(registry, expired, "notes", "1.0.1", folder)
    assert gone.status_code == 401 and "expired" in gone.json()["error"]["message"]

    listed = httpx.get(f"{registry.url}/v1/tokens", headers=_auth(admin)).json()["tokens"]
    assert {t["label"] for t in listed} == {"release laptop", "maintainer", "old"}
    assert all(publisher not in str(t) for t in listed)
    revoked = httpx.delete(f"{registry.url}/v1/tokens/{token_id(publisher)}", headers=_auth(admin))
    assert revoked.status_code == 200 and revoked.json()["revokedAt"]
    again = _put(registry, publisher, "notes", "1.0.2", folder)
    assert again.status_code == 401 and "revoked" in again.json()["error"]["message"]

    audit = httpx.get(f"{registry.url}/v1/audit", headers=_auth(admin)).json()["audit"]
    assert [(a["action"], a["version"], a["tokenLabel"], a["sha256"]) for a in audit] == [
        ("publish", "1.0.0", "release laptop", sha),
        ("status:yanked", "1.0.0", "maintainer", sha),
    ]
    # nothing of a refused write reached the blob store
    blobs = [p for p in (registry.data / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == 1


def test_operator_token_commands(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = cli_env(tmp_path / "home")
    made = kiln(
        "registry",
        "token",
        "--data",
        str(data),
        "--namespace",
        "acme",
        "--label",
        "ci",
        "--scope",
        "publish",
        "--expires",
        "30d",
        env=env,
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip()
    listed = kiln("registry", "token", "list", "--data", str(data), env=env, cwd=tmp_path)
    assert (
        token_id(secret) in listed.stdout
        and "publish" in listed.stdout
        and secret not in listed.stdout
    )
    revoked = kiln(
        "registry", "token", "revoke", token_id(secret), "--data", str(data), env=env, cwd=tmp_path
    )
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    for past in ("2020-01-01T00:00:00Z", "0d"):  # a token that could never be used
        refused = kiln(
            "registry", "token", "--data", str(data), "--namespace", "acme", "--expires", past,
            env=env, cwd=tmp_path,
        )  # fmt: skip
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout
        assert "is not in the future" in refused.stderr and "Traceback" not in refused.stderr
    for since in ("-1", str(2**63)):  # was an internal error (SQLite's integers are 64-bit)
        refused = kiln(
            "registry", "audit", "--data", str(data), f"--since={since}", env=env, cwd=tmp_path
        )
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout
        assert "--since" in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    for far in ("99999999999d", "99999999h", "9999-12-31T23:59:59-14:00"):  # past year 9999
        refused = kiln(
            "registry", "token", "--data", str(data), "--namespace", "acme", "--expires", far,
            env=env, cwd=tmp_path,
        )  # fmt: skip
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout  # was a crash
        assert "too far" in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    for namespace, ok in (("n" * 40, True), ("n" * 41, False)):  # docs/registry.md: at most 40
        made = kiln(
            "registry", "token", "--data", str(data), "--namespace", namespace,
            env=env, cwd=tmp_path,
        )  # fmt: skip
        assert (made.returncode == 0) is ok, made.stderr
        assert ok or ("invalid namespace" in made.stderr and made.stdout == ""), made.stderr
    missing = kiln(
        "registry",
        "token",
        "revoke",
        "tok_000000000000",
        "--data",
        str(data),
        env=env,
        cwd=tmp_path,
    )
    assert (
        missing.returncode != 0
        and "no token" in missing.stderr
        and "Traceback" not in missing.stderr
    )


def test_trusted_publishing_with_oidc(
    registry: LiveRegistry, issuer: Issuer, tmp_path: Path
) -> None:
    store = registry.app.state.registry.store  # type: ignore[attr-defined]
    exchange = f"{registry.url}/v1/oidc/token"
    assert httpx.post(exchange, json={"token": issuer.id_token()}).status_code == 403  # none yet
    store.add_trusted_publisher("acme", issuer.url, REPO, WORKFLOW)

    good = issuer.id_token()
    minted = httpx.post(exchange, json={"token": good})
    assert minted.status_code == 201, minted.text
    token = minted.json()["token"]
    assert minted.json()["namespace"] == "acme"
    replay = httpx.post(exchange, json={"token": good})
    assert replay.status_code == 401 and "already used" in replay.text

    attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for bad, status in [
        (issuer.id_token(key=attacker), 401),  # not signed by the issuer's JWKS
        (issuer.id_token(aud="another-registry"), 401),
        (issuer.id_token(exp=int(time.time()) - 3600), 401),
        (issuer.id_token(job_workflow_ref=f"{REPO}/.github/workflows/other.yml@refs/heads/x"), 403),
        (issuer.id_token(repository="evil/skills"), 403),
    ]:
        assert httpx.post(exchange, json={"token": bad}).status_code == status, bad

    folder = make_skill(tmp_path, "notes", description="Writes notes.")
    assert _put(registry, token, "notes", "1.0.0", folder).status_code == 201
    yank = httpx.put(
        f"{registry.url}/v1/skills/acme/notes/versions/1.0.0/status",
        json={"status": "yanked"},
        headers=_auth(token),
    )
    assert yank.status_code == 403  # a CI token publishes, nothing else
    [entry] = store.audit_log("acme")
    assert entry["tokenLabel"] == f"oidc {REPO} {WORKFLOW} run 42"
    record = store.get_token(token)
    assert record["scopes"] == ["publish"] and record["expiresAt"]


def test_made_up_key_ids_do_not_make_the_registry_hammer_the_issuer(
    registry: LiveRegistry, issuer: Issuer
) -> None:
    """Before, every ID token with an unknown `kid` (no credentials needed to send one) made
    the registry fetch the issuer's discovery document and JWKS twice over: an amplifier
    aimed at GitHub, whose rate limit would then stop real trusted publishing."""
    store = registry.app.state.registry.store  # type: ignore[attr-defined]
    store.add_trusted_publisher("acme", issuer.url, REPO, WORKFLOW)
    now = int(time.time())
    claims = {"iss": issuer.url, "aud": "kiln-registry", "iat": now, "exp": now + 300}
    for i in range(10):
        forged = jwt.encode(claims, issuer.key, algorithm="RS256", headers={"kid": f"x{i}"})
        answer = httpx.post(f"{registry.url}/v1/oidc/token", json={"token": forged})
        assert answer.status_code == 401 and "is not published" in answer.text
    assert issuer.fetches <= 2, issuer.fetches  # the first fetch, and one refetch at most
    good = httpx.post(f"{registry.url}/v1/oidc/token", json={"token": issuer.id_token()})
    assert good.status_code == 201, good.text  # the known key still works from the cache


def test_cli_publish_in_github_actions_uses_trusted_publishing(
    registry: LiveRegistry, issuer: Issuer, tmp_path: Path
) -> None:
    registry.app.state.registry.store.add_trusted_publisher("acme", issuer.url, REPO, WORKFLOW)  # type: ignore[attr-defined]
    folder = make_skill(tmp_path, "notes", description="Writes notes.")
    env = cli_env(
        tmp_path / "home",
        ACTIONS_ID_TOKEN_REQUEST_URL=f"{issuer.url}/request?api-version=2.0",
        ACTIONS_ID_TOKEN_REQUEST_TOKEN=issuer.request_bearer,
    )
    result = kiln(
        "skills",
        "publish",
        str(folder),
        "--registry",
        registry.url,
        "--version",
        "1.0.0",
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "published acme/notes@1.0.0" in result.stdout and "trusted publishing" in result.stderr


def test_authors_list_revoke_and_audit_from_the_cli(registry: LiveRegistry, tmp_path: Path) -> None:
    store = registry.app.state.registry.store  # type: ignore[attr-defined]
    mine = store.create_token("acme", label="laptop")
    leaked = store.create_token("acme", label="old ci", scopes=["publish"])
    store.create_token("other", label="not mine")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url, KILN_REGISTRY_TOKEN=mine)
    folder = make_skill(tmp_path, "notes", description="Writes notes.")
    assert _put(registry, leaked, "notes", "1.0.0", folder).status_code == 201

    listed = kiln("skills", "tokens", env=env, cwd=tmp_path)
    assert listed.returncode == 0 and "laptop" in listed.stdout and "old ci" in listed.stdout
    assert "not mine" not in listed.stdout and leaked not in listed.stdout
    revoked = kiln("skills", "tokens", "--revoke", token_id(leaked), env=env, cwd=tmp_path)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    assert _put(registry, leaked, "notes", "1.0.1", folder).status_code == 401
    audit = kiln("skills", "audit", env=env, cwd=tmp_path)
    assert "publish acme/notes@1.0.0 sha256:" in audit.stdout and "(old ci)" in audit.stdout


def test_a_token_for_a_folder_that_holds_no_registry_says_it_made_one(tmp_path: Path) -> None:
    """Before, a mistyped --data printed a token without a word: a new, empty registry no
    server reads, so every use of that token was a 401."""
    env = cli_env(tmp_path / "home")
    typo = tmp_path / "registry-dat"
    made = kiln("registry", "token", "--data", str(typo), "--namespace", "acme", env=env,
                cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0 and made.stdout.startswith("kiln_"), made.stderr
    assert made.stderr.count("\n") == 1
    assert f"no registry in {typo} yet: created one" in made.stderr
    again = kiln("registry", "token", "--data", str(typo), "--namespace", "acme", env=env,
                 cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0 and again.stderr == ""


@pytest.mark.parametrize(
    "bad", [["--namespace", "Bad NS"], ["--namespace", "acme", "--label", "x" * 1000]]
)
def test_a_refused_token_creates_no_registry(tmp_path: Path, bad: list[str]) -> None:
    """`kiln registry token --data NEW --namespace 'Bad NS'` said a registry was created in NEW,
    then refused the namespace: a mistyped command left a database and a signing key behind."""
    data = tmp_path / "registry-data"
    proc = kiln("registry", "token", "--data", str(data), *bad,
                env=cli_env(tmp_path / "home"), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("kiln: "), proc.stderr
    assert not data.exists()
