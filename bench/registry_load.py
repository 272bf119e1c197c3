"""Registry load benchmark: three server processes per backend pair, PostgreSQL + S3 beside
SQLite + folder, measured in the same run. Prints figures; asserts nothing.

    python bench/registry_load.py [--skills 100000] [--clients 300] [--duration 60] [--json]

Per backend pair: seed the catalogue (a real pool through the publish pipeline, the rest in bulk,
see ``registry_seed``), start three ``kiln registry serve`` processes on the shared stores, then
measure: search p95 over distinct queries (goal <= 30 ms), verified install p95 of a 100 KB skill
(cold cache: download, sha256, signature, unpack, lockfile), publish throughput over HTTP, and
``--clients`` keep-alive clients searching and downloading for ``--duration`` seconds while
publishers write new versions; half-way through one server process is killed (SIGKILL). Clients
retry a request on another server when their connection fails, as behind a load balancer. At
the end every acknowledged publish must be stored exactly once and nothing else may be in the
change feed. PostgreSQL is a throwaway local cluster and S3 moto's server (``tests/registry/
servers.py``), so absolute figures include those servers sharing the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.registry_seed import (  # noqa: E402
    VOCAB,
    WORDS,
    bulk_postgres,
    bulk_sqlite,
    clones,
    real_pool,
    skill_archive,
)
from skills_registry.client import Cache, RegistryClient, TrustStore  # noqa: E402
from skills_registry.install import Installer, Scope  # noqa: E402
from skills_registry.registry.backends import load_signer, open_backends  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


class Cluster:
    """Three `kiln registry serve` processes on one pair of stores."""

    def __init__(self, root: Path, args: list[str], env: dict[str, str], count: int = 3) -> None:
        self.procs: list[subprocess.Popen[str]] = []
        self.urls: list[str] = []
        for _ in range(count):
            proc = subprocess.Popen(
                [sys.executable, "-m", "lsp_server", "registry", "serve", "--port", "0", *args],
                stderr=subprocess.PIPE,
                text=True,
                env={**env, "KILN_HOME": str(root / "server-home")},
            )
            assert proc.stderr is not None
            match = re.search(r"listening on (http://\S+)", proc.stderr.readline())
            if not match:
                raise SystemExit("registry did not start: " + proc.stderr.read()[-500:])
            self.procs.append(proc)
            self.urls.append(match.group(1))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=20)


def search_latency(url: str, queries: int) -> dict[str, float]:
    """Distinct one- and two-word queries over the catalogue's vocabulary (no cache can help)."""
    rng = random.Random(11)
    picked = {" ".join(rng.sample(VOCAB, rng.choice((1, 2)))) for _ in range(queries)}
    timings, base, hits = [], [], []
    with httpx.Client(base_url=url) as http:
        http.get("/v1/skills", params={"q": "warmup"})
        for q in sorted(picked):
            t = time.perf_counter()
            http.get("/healthz").raise_for_status()
            base.append(time.perf_counter() - t)
            t = time.perf_counter()
            found = http.get("/v1/skills", params={"q": q, "limit": 20})
            timings.append(time.perf_counter() - t)
            hits.append(len(found.json()["skills"]))
    return {
        "p50_ms": _pct(timings, 0.5),
        "p95_ms": _pct(timings, 0.95),
        "baseline_p95_ms": _pct(base, 0.95),
        "full_pages": sum(h == 20 for h in hits) / len(hits),
    }


def install_time(url: str, token: str, runs: int) -> dict[str, float]:
    archive = skill_archive("big-skill", random.Random(3), body_bytes=100 * 1024)
    with RegistryClient(url, token) as client:
        doc = client.publish("bench/big-skill", "1.0.0", archive)
    home = Path(tempfile.mkdtemp(prefix="kiln-bench-home-"))
    installs, downloads = [], []
    try:
        with RegistryClient(url) as client:
            for i in range(runs):
                t = time.perf_counter()
                client.download("bench/big-skill", "1.0.0")
                downloads.append(time.perf_counter() - t)
                cache = Cache(home / f"cache{i}")  # cold: every run downloads and verifies
                installer = Installer(
                    Scope.project(home / f"p{i}"),
                    yes=True,
                    cache=cache,
                    trust=TrustStore(home / "keys.json"),
                )
                t = time.perf_counter()
                installer.install(client, "bench/big-skill")
                installs.append(time.perf_counter() - t)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return {
        "archive_kb": doc["archiveSize"] / 1024,
        "unpacked_kb": doc["unpackedSize"] / 1024,
        "p50_ms": _pct(installs, 0.5),
        "p95_ms": _pct(installs, 0.95),
        "bare_download_p50_ms": _pct(downloads, 0.5),
    }


async def _request(
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    host: str,
    method: str,
    path: str,
    body: bytes = b"",
    headers: str = "",
) -> int:
    reader, writer = conn
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n{headers}\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    await reader.readexactly(int(fields.get("content-length", "0")))
    return int(lines[0].split()[1])


class Balancer:
    """Client-side round robin: a failed connection moves the client to the next server."""

    def __init__(self, urls: list[str]) -> None:
        self.addrs = [u.removeprefix("http://").rsplit(":", 1) for u in urls]

    async def call(self, state: dict[str, Any], method: str, path: str, **kw: Any) -> int:
        for attempt in range(3 * len(self.addrs)):
            if state.get("conn") is None:
                host, port = self.addrs[state["server"] % len(self.addrs)]
                try:
                    state["conn"] = await asyncio.open_connection(host, int(port))
                    state["host"] = host
                except OSError:
                    state["server"] += 1
                    state["retries"] = state.get("retries", 0) + 1
                    await asyncio.sleep(0.01 * attempt)
                    continue
            try:
                return await _request(state["conn"], state["host"], method, path, **kw)
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                state["conn"][1].close()
                state["conn"] = None
                state["server"] += 1
                state["retries"] = state.get("retries", 0) + 1
        raise ConnectionError(f"{method} {path}: every server refused")


async def load(
    cluster: Cluster, clients: int, duration: float, ids: list[str], token: str, tag: str
) -> dict[str, Any]:
    balancer = Balancer(cluster.urls)
    errors: list[str] = []
    latencies: list[float] = []
    published: list[str] = []
    start = time.monotonic()
    deadline = start + duration
    auth = f"Authorization: Bearer {token}\r\n"

    async def reader(seed: int) -> None:
        rng, state = random.Random(seed), {"server": seed, "conn": None}
        while time.monotonic() < deadline:
            roll = rng.random()
            if roll < 0.6:  # popular queries repeat: the 50 topic words
                path = f"/v1/skills?q={rng.choice(WORDS)}"
            elif roll < 0.9:
                path = f"/v1/skills/{rng.choice(ids)}/versions/1.0.0/archive"
            else:
                path = f"/v1/skills/{rng.choice(ids)}"
            t = time.perf_counter()
            try:
                status = await balancer.call(state, "GET", path)
            except ConnectionError as exc:
                errors.append(str(exc))
                continue
            latencies.append(time.perf_counter() - t)
            if status != 200:
                errors.append(f"HTTP {status} {path}")

    async def publisher(n: int) -> None:
        state, j = {"server": n, "conn": None}, 0
        while time.monotonic() < deadline:
            version = f"1.0.{j}"
            body = skill_archive(f"load-{tag}-{n}", random.Random(j))
            retried = state.get("retries", 0)
            try:
                status = await balancer.call(
                    state, "PUT", f"/v1/skills/bench/load-{tag}-{n}/versions/{version}",
                    body=body, headers=auth,
                )  # fmt: skip
            except ConnectionError as exc:
                errors.append(str(exc))
                continue
            # a retried publish may find its first attempt stored by the server that died
            if status == 201 or (status == 409 and state.get("retries", 0) > retried):
                published.append(f"bench/load-{tag}-{n}@{version}")
            else:
                errors.append(f"publish HTTP {status}")
            j += 1

    async def killer() -> None:
        await asyncio.sleep(duration / 2)
        cluster.procs[0].send_signal(signal.SIGKILL)

    tasks = [reader(i) for i in range(clients)] + [publisher(n) for n in range(4)]
    await asyncio.gather(*tasks, killer())
    return {
        "requests": len(latencies),
        "rps": len(latencies) / duration,
        "p50_ms": _pct(latencies, 0.5),
        "p95_ms": _pct(latencies, 0.95),
        "errors": len(errors),
        "error_kinds": sorted(set(errors))[:5],
        "published": published,
    }


def check_publishes(url: str, published: list[str]) -> dict[str, int]:
    """Every acknowledged version stored once; the feed holds one publish per version."""
    with httpx.Client(base_url=url, timeout=30) as http:
        missing = sum(
            http.get(f"/v1/skills/{p.split('@')[0]}/versions/{p.split('@')[1]}").status_code != 200
            for p in published
        )
        feed: list[str] = []
        since = 0
        while True:
            page = http.get("/v1/changes", params={"since": since, "limit": 1000}).json()
            if not page["changes"]:
                break
            feed += [
                f"{c['id']}@{c['version']}"
                for c in page["changes"]
                if c["kind"] == "publish" and c["id"].startswith("bench/load-")
            ]
            since = page["metadata"]["nextSince"]
    return {
        "acknowledged": len(published),
        "missing": missing,
        "duplicated": len(feed) - len(set(feed)),
        "unacknowledged_in_feed": len(set(feed) - set(published)),
    }


def publish_throughput(cluster: Cluster, token: str, count: int, workers: int) -> float:
    async def run() -> float:
        balancer = Balancer(cluster.urls)
        bodies = [skill_archive(f"tp-{i}", random.Random(i)) for i in range(count)]
        todo = list(range(count))
        auth = f"Authorization: Bearer {token}\r\n"

        async def worker(n: int) -> None:
            state = {"server": n, "conn": None}
            while todo:
                i = todo.pop()
                path = f"/v1/skills/bench/tp-{i}/versions/1.0.0"
                status = await balancer.call(state, "PUT", path, body=bodies[i], headers=auth)
                assert status == 201, status

        t = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(workers)))
        return count / (time.perf_counter() - t)

    return asyncio.run(run())


def bench_backend(
    kind: str, args: argparse.Namespace, root: Path, env: dict[str, str]
) -> dict[str, Any]:
    data = root / kind
    key = root / "signing.key"
    serve_args = ["--signing-key", str(key)]
    db = blobs = None
    if kind == "postgresql+s3":
        db, blobs = args.pg.new_database("bench"), f"s3://{args.s3.new_bucket()}/skills"
        serve_args += ["--db", db, "--blobs", blobs]
    else:
        serve_args += ["--data", str(data)]
    backends = open_backends(data, db, blobs)
    signer = load_signer(data, key)
    backends.store.bind_signing_key(signer.key_id)
    t = time.perf_counter()
    pool = real_pool(backends.store, backends.blobs, signer, args.pool)
    if not hasattr(args, "clones"):  # the same catalogue for both backends (same key, same pool)
        args.clones = clones(pool, args.skills - args.pool, signer)
    (bulk_postgres if db else bulk_sqlite)(backends.store, args.clones)
    seeded = time.perf_counter() - t
    token = backends.store.create_token("bench")
    backends.close()
    cluster = Cluster(root, serve_args, env)
    try:
        out: dict[str, Any] = {"seed_s": seeded}
        out["search"] = search_latency(cluster.urls[1], args.queries)
        out["install"] = install_time(cluster.urls[1], token, args.installs)
        out["publish_per_s"] = publish_throughput(cluster, token, args.publishes, 8)
        ids = [d["id"] for d in pool]
        out["load"] = asyncio.run(load(cluster, args.clients, args.duration, ids, token, kind[:2]))
        out["integrity"] = check_publishes(cluster.urls[1], out["load"].pop("published"))
    finally:
        cluster.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=100_000)
    parser.add_argument("--pool", type=int, default=300, help="skills published for real")
    parser.add_argument("--clients", type=int, default=300)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--installs", type=int, default=20)
    parser.add_argument("--publishes", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from tests.registry.servers import start_postgres, start_s3

    root = Path(tempfile.mkdtemp(prefix="kiln-registry-load-"))
    args.pg, args.s3 = start_postgres(max_connections=300), start_s3()
    env = {**os.environ, **args.s3.env()}
    os.environ.update(args.s3.env())
    results: dict[str, Any] = {"skills": args.skills}
    try:
        for kind in ("postgresql+s3", "sqlite+folder"):
            results[kind] = bench_backend(kind, args, root, env)
    finally:
        args.pg.stop()
        args.s3.stop()
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{args.skills} skills, 3 server processes per backend, {args.clients} clients x {args.duration:.0f}s"
    )
    print(f"{'':28}{'postgresql+s3':>22}{'sqlite+folder':>22}")
    rows = [
        ("seed (pool + bulk) s", lambda r: f"{r['seed_s']:.1f}"),
        ("search p50 / p95 ms", lambda r: f"{r['search']['p50_ms']:.1f} / {r['search']['p95_ms']:.1f}"),
        ("  queries with a full page", lambda r: f"{r['search']['full_pages']:.0%}"),
        ("  baseline /healthz p95 ms", lambda r: f"{r['search']['baseline_p95_ms']:.1f}"),
        ("install 100KB p50 / p95 ms", lambda r: f"{r['install']['p50_ms']:.0f} / {r['install']['p95_ms']:.0f}"),
        ("  bare download p50 ms", lambda r: f"{r['install']['bare_download_p50_ms']:.1f}"),
        ("publish over HTTP /s", lambda r: f"{r['publish_per_s']:.0f}"),
        ("load req/s", lambda r: f"{r['load']['rps']:.0f}"),
        ("load p50 / p95 ms", lambda r: f"{r['load']['p50_ms']:.0f} / {r['load']['p95_ms']:.0f}"),
        ("load failed requests", lambda r: f"{r['load']['errors']} {r['load']['error_kinds'] or ''}"),
        ("publishes acknowledged", lambda r: str(r["integrity"]["acknowledged"])),
        ("  lost / duplicated / extra", lambda r: "{missing} / {duplicated} / {unacknowledged_in_feed}".format(**r["integrity"])),
    ]  # fmt: skip
    for label, cell in rows:
        print(f"{label:28}{cell(results['postgresql+s3']):>22}{cell(results['sqlite+folder']):>22}")
    print("(one server killed with SIGKILL half-way through the load; goal: search p95 <= 30 ms)")


if __name__ == "__main__":
    main()
