"""A namespace's owner reads how close it is to each quota: `GET /v1/namespaces/{ns}/usage`
and `kiln skills usage`; the operator reads any namespace's with `kiln registry usage`.

Before, a publisher learnt of a quota only when a publish was refused. Real `kiln registry
serve` (with its quota flags) on 127.0.0.1, real HTTP, real `kiln` processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from skills_registry.archive import build_archive, read_dir
from skills_registry.client import RegistryClient
from tests.registry.conftest import (
    LiveRegistry,
    cli_env,
    fails,
    kiln,
    make_skill,
    ok,
    serving,
)

LIMITS = ("--namespace-bytes", "100000", "--versions-per-skill", "5", "--publishes-per-hour", "7")


def test_the_owner_reads_its_usage_and_no_one_else_does(tmp_path: Path) -> None:
    data, env = tmp_path / "data", cli_env(tmp_path / "home")

    def token(namespace: str) -> str:
        made = kiln("registry", "token", "--data", str(data), "--namespace", namespace,
                    "--scope", "tag", env=env, cwd=tmp_path)  # fmt: skip
        return ok(made).strip()

    with serving(data, tmp_path / "server-home", *LIMITS) as port:
        url = f"http://127.0.0.1:{port}"
        acme, other = token("acme"), token("other")
        publisher = ok(kiln("registry", "token", "--data", str(data), "--namespace", "acme",
                            env=env, cwd=tmp_path)).strip()  # fmt: skip
        sizes = []
        with RegistryClient(url, publisher) as client:
            for name, version in (("notes", "1.0.0"), ("notes", "1.1.0"), ("todo", "1.0.0")):
                archive = build_archive(read_dir(make_skill(tmp_path / "skills", name)))
                sizes.append(client.publish(f"acme/{name}", version, archive)["archiveSize"])

        usage_url = f"{url}/v1/namespaces/acme/usage"
        answer = httpx.get(usage_url, headers={"Authorization": f"Bearer {acme}"})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {
            "namespace": "acme",
            "namespaceBytes": {"used": sum(sizes), "limit": 100000},
            "versionsPerSkill": {
                "limit": 5,
                "largest": {"id": "acme/notes", "used": 2},
                "skills": [{"id": "acme/notes", "used": 2}, {"id": "acme/todo", "used": 1}],
            },
            "publishesPerHour": {"used": 3, "limit": 7},
            "writesPerHour": {"used": 3, "limit": 600},  # the audit log's three publishes
        }
        assert httpx.get(usage_url).status_code == 401
        refused = httpx.get(usage_url, headers={"Authorization": f"Bearer {other}"})
        assert refused.status_code == 403
        assert "'other', not 'acme'" in refused.json()["error"]["message"]
        empty = httpx.get(
            f"{url}/v1/namespaces/other/usage", headers={"Authorization": f"Bearer {other}"}
        ).json()
        assert empty["namespaceBytes"]["used"] == 0 and empty["versionsPerSkill"]["largest"] is None

        out = ok(kiln("skills", "usage", "--registry", url, "--token", acme, env=env, cwd=tmp_path))
        assert f"archive bytes      {sum(sizes)} of 100000" in out
        assert "versions per skill 2 (acme/notes) of 5" in out
        assert "publishes per hour 3 of 7" in out
        # the operator (the registry's admin, who holds its database) reads any namespace
        admin = kiln("registry", "usage", "acme", "--data", str(data), "--json", *LIMITS,
                     env=env, cwd=tmp_path)  # fmt: skip
        assert json.loads(ok(admin)) == answer.json()
        fails(
            kiln(
                "skills",
                "usage",
                "acme",
                "--registry",
                url,
                "--token",
                other,
                env=env,
                cwd=tmp_path,
            ),  # fmt: skip
            5,
            "'other', not 'acme'",
        )


def test_each_store_counts_the_usage_alike(backend_registry: LiveRegistry, tmp_path: Path) -> None:
    """SQLite and PostgreSQL (rows by name) answer the same counts, other namespaces apart."""
    live, sizes = backend_registry, []
    for namespace, name, version in (
        ("acme", "notes", "1.0.0"),
        ("acme", "notes", "2.0.0"),
        ("acme", "todo", "1.0.0"),
        ("other", "notes", "1.0.0"),
    ):
        folder = make_skill(tmp_path / namespace / version, name, body=f"# {version}\n")
        with RegistryClient(live.url, live.token(namespace)) as client:
            doc = client.publish(f"{namespace}/{name}", version, build_archive(read_dir(folder)))
        sizes.append(doc["archiveSize"])
    with RegistryClient(live.url, live.token("acme")) as client:
        answer = client.usage("acme")
    assert answer["namespaceBytes"]["used"] == sum(sizes[:3])
    assert answer["versionsPerSkill"]["skills"] == [
        {"id": "acme/notes", "used": 2},
        {"id": "acme/todo", "used": 1},
    ]
    assert answer["publishesPerHour"] == {"used": 3, "limit": 60}
    assert answer["writesPerHour"] == {"used": 3, "limit": 600}
