"""Registry load benchmark: search latency at 10,000 skills, verified install time, and 200
concurrent clients searching and downloading on loopback. Prints figures; asserts nothing.

    python bench/registry_load.py [--skills 10000] [--duration 30] [--clients 200] [--json]

Skills are seeded through the real publish pipeline (validate, hash, scan, sign, store) in this
process, then a real `kiln registry serve` subprocess answers every HTTP request. Each figure
is printed with a baseline measured in the same run (a trivial endpoint, a bare download) so
the ratios mean something on any machine. Targets: search p95 <= 20 ms, install of a 100 KB
skill <= 150 ms, zero errors under load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from skills_registry.archive import ArchiveContents, build_archive
from skills_registry.client import Cache, RegistryClient, TrustStore
from skills_registry.install import Installer, Scope
from skills_registry.registry.publish import build_release
from skills_registry.registry.signing import load_or_create_signer
from skills_registry.registry.storage import open_storage

WORDS = [
    "pdf",
    "excel",
    "chart",
    "lint",
    "yaml",
    "docker",
    "deploy",
    "review",
    "test",
    "api",
    "graphql",
    "sql",
    "schema",
    "migrate",
    "python",
    "rust",
    "go",
    "typescript",
    "react",
    "css",
    "design",
    "brand",
    "slides",
    "report",
    "invoice",
    "email",
    "calendar",
    "security",
    "audit",
    "license",
    "cloud",
    "kubernetes",
    "terraform",
    "logs",
    "metrics",
    "trace",
    "cache",
    "queue",
    "search",
    "index",
    "embed",
    "translate",
    "summarize",
    "diagram",
    "markdown",
    "latex",
    "notebook",
    "data",
    "clean",
    "scrape",
]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _skill(name: str, rng: random.Random, body_bytes: int = 0) -> bytes:
    desc = " ".join(rng.sample(WORDS, 8)).capitalize() + "."
    files = {
        "SKILL.md": f"---\nname: {name}\ndescription: {desc}\n---\n# {name}\n\nUse it well.\n".encode()
    }
    if body_bytes:
        per = body_bytes // 10
        for i in range(10):
            files[f"reference/part{i}.md"] = " ".join(
                rng.choice(WORDS) for _ in range(per // 6)
            ).encode()[:per]
    return build_archive(ArchiveContents(name, files))


def seed(data: Path, count: int) -> float:
    store, blobs = open_storage(data)
    signer = load_or_create_signer(data)
    rng = random.Random(7)
    start = time.perf_counter()
    for i in range(count):
        name = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{i}"
        archive = _skill(name, rng)
        doc = build_release(f"ns{i % 50}/{name}", "1.0.0", archive, signer)
        blobs.put(archive)
        store.add_version(doc)
    return time.perf_counter() - start


def serve(data: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsp_server",
            "registry",
            "serve",
            "--port",
            "0",
            "--data",
            str(data),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KILN_HOME": str(data.parent / "server-home")},
    )
    assert proc.stderr is not None
    match = re.search(r"listening on (http://\S+)", proc.stderr.readline())
    if not match:
        proc.kill()
        raise SystemExit("registry did not start")
    return proc, match.group(1)


def search_latency(url: str, queries: int) -> dict[str, float]:
    """Cold: every query distinct (the server's result cache cannot help); warm: the same again."""
    rng = random.Random(11)
    pool = [w for w in WORDS] + [f"{a} {b}" for a in WORDS for b in WORDS if a != b]
    picked = rng.sample(pool, min(queries, len(pool)))
    with httpx.Client(base_url=url) as http:
        http.get("/v1/skills", params={"q": "warmup"})
        base: list[float] = []
        cold: list[float] = []
        warm: list[float] = []
        for timings in (cold, warm):
            for q in picked:
                t = time.perf_counter()
                http.get("/.well-known/kiln-registry.json").raise_for_status()
                base.append(time.perf_counter() - t)
                t = time.perf_counter()
                http.get("/v1/skills", params={"q": q, "limit": 20}).raise_for_status()
                timings.append(time.perf_counter() - t)
    return {
        "search_p50_ms": _pct(cold, 0.5),
        "search_p95_ms": _pct(cold, 0.95),
        "warm_p95_ms": _pct(warm, 0.95),
        "baseline_p95_ms": _pct(base, 0.95),
        "ratio_p95": _pct(cold, 0.95) / max(_pct(base, 0.95), 1e-6),
    }


def install_time(url: str, data: Path, runs: int) -> dict[str, float]:
    token = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server",
            "registry",
            "token",
            "--data",
            str(data),
            "--namespace",
            "bench",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    archive = _skill("big-skill", random.Random(3), body_bytes=100 * 1024)
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
                project = home / f"p{i}"
                cache = Cache(home / f"cache{i}")  # cold cache: every run downloads and verifies
                trust = TrustStore(home / "trusted_keys.json")
                t = time.perf_counter()
                Installer(Scope.project(project), yes=True, cache=cache, trust=trust).install(
                    client, "bench/big-skill"
                )
                installs.append(time.perf_counter() - t)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return {
        "unpacked_kb": doc["unpackedSize"] / 1024,
        "install_median_ms": statistics.median(installs) * 1000,
        "install_p95_ms": _pct(installs, 0.95),
        "download_median_ms": statistics.median(downloads) * 1000,
        "ratio_install_to_download": statistics.median(installs)
        / max(statistics.median(downloads), 1e-6),
    }


async def _raw_get(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, path: str
) -> int:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = next(
        int(v)
        for k, _, v in (line.partition(":") for line in lines[1:])
        if k.lower() == "content-length"
    )
    await reader.readexactly(length)
    return status


async def load(url: str, clients: int, duration: float, ids: list[str]) -> dict[str, Any]:
    errors: list[str] = []
    latencies: list[float] = []
    deadline = time.monotonic() + duration

    host, _, port = url.removeprefix("http://").partition(":")

    async def worker(seed: int) -> None:
        # One keep-alive connection per simulated user, spoken with a minimal HTTP/1.1 client:
        # on 2 cores a full client library (httpx) spends more CPU than the server being measured.
        rng = random.Random(seed)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while time.monotonic() < deadline:
                if rng.random() < 0.5:
                    path = f"/v1/skills?q={rng.choice(WORDS)}"
                else:
                    path = f"/v1/skills/{rng.choice(ids)}/versions/1.0.0/archive"
                t = time.perf_counter()
                try:
                    status = await _raw_get(reader, writer, host, path)
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    errors.append(type(exc).__name__)
                    break
                latencies.append(time.perf_counter() - t)
                if status != 200:
                    errors.append(f"HTTP {status}")
        finally:
            writer.close()

    await asyncio.gather(*(worker(i) for i in range(clients)))
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "rps": len(latencies) / duration,
        "p50_ms": _pct(latencies, 0.5) if latencies else 0.0,
        "p95_ms": _pct(latencies, 0.95) if latencies else 0.0,
        "error_kinds": sorted(set(errors))[:5],
    }  # type: ignore[dict-item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=10_000)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of concurrent load")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--installs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="kiln-registry-bench-"))
    data = root / "data"
    results: dict[str, Any] = {"skills": args.skills}
    proc = None
    try:
        seconds = seed(data, args.skills)
        results["seed"] = {"seconds": seconds, "publishes_per_s": args.skills / seconds}
        proc, url = serve(data)
        results["search"] = search_latency(url, args.queries)
        results["install_100kb"] = install_time(url, data, args.installs)
        with httpx.Client(base_url=url) as http:
            ids = [s["id"] for s in http.get("/v1/skills", params={"limit": 100}).json()["skills"]]
        results["load"] = {
            "clients": args.clients,
            "duration_s": args.duration,
            **asyncio.run(load(url, args.clients, args.duration, ids)),
        }
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    s, i, lo = results["search"], results["install_100kb"], results["load"]  # type: ignore[assignment]
    print(
        f"seeded {args.skills} skills via the publish pipeline in {results['seed']['seconds']:.1f}s"
    )  # type: ignore[index]
    print(
        f"search  cold p50 {s['search_p50_ms']:.2f} ms  p95 {s['search_p95_ms']:.2f} ms (target <= 20)  "
        f"warm p95 {s['warm_p95_ms']:.2f} ms  baseline p95 {s['baseline_p95_ms']:.2f} ms  ratio {s['ratio_p95']:.1f}x"
    )
    print(
        f"install {i['unpacked_kb']:.0f} KB skill  median {i['install_median_ms']:.1f} ms  p95 {i['install_p95_ms']:.1f} ms "
        f"(target <= 150)  bare download {i['download_median_ms']:.1f} ms  ratio {i['ratio_install_to_download']:.1f}x"
    )
    print(
        f"load    {lo['clients']} clients x {lo['duration_s']:.0f}s: {lo['requests']} requests, {lo['rps']:.0f} req/s, "
        f"p50 {lo['p50_ms']:.1f} ms, p95 {lo['p95_ms']:.1f} ms, errors {lo['errors']} {lo['error_kinds'] or ''}"
    )


if __name__ == "__main__":
    main()
