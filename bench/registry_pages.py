"""Registry paging at scale: search pages while skills are published, page depth, many versions.
Prints figures with their baselines from the same run; asserts nothing.

    python bench/registry_pages.py [--skills 10000] [--versions 200] [--json]

One `kiln registry serve` process on SQLite + folder, seeded with ``--skills`` skills (a real
pool through the publish pipeline, the rest in bulk, see ``registry_seed``). Then:

- walk every page of a broad search while a publisher adds a new, top-ranked matching skill
  before each page request; count results seen twice and pre-existing matches never seen. The
  baseline walk sends offset-only cursors (what the server handed out before cursors carried the
  first page's ``upto`` bound), so both rows come from the same server and catalogue;
- p50 of the last page of distinct two-word searches against their first page, and of the last
  page of the id listing (keyset) against its first;
- p50 of a skill's signed metadata, versions page and detail at ``--versions`` versions against
  the same requests for a skill with one version.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.registry_load import Cluster, _pct  # noqa: E402
from bench.registry_seed import WORDS, bulk_sqlite, clones, real_pool, skill_archive  # noqa: E402
from skills_registry.registry.backends import load_signer, open_backends  # noqa: E402
from skills_registry.registry.storage import decode_cursor, encode_cursor  # noqa: E402

BROAD = "pdf excel chart lint yaml docker deploy review"


def _put(http: httpx.Client, token: str, skill_id: str, version: str, archive: bytes) -> None:
    response = http.put(
        f"/v1/skills/{skill_id}/versions/{version}",
        content=archive,
        headers={"Authorization": f"Bearer {token}"},
    )
    response.raise_for_status()


def walk_while_publishing(url: str, token: str, offset_only: bool, tag: str) -> dict[str, int]:
    """Every page of ``BROAD`` (20 a page), one new matching skill published before each page."""
    with httpx.Client(base_url=url, timeout=60) as http:
        before = set()
        cursor = None
        while True:  # what matched before the walk: the results a client must see once each
            body = http.get("/v1/skills", params={"q": BROAD, "limit": 100, "cursor": cursor})
            before |= {s["id"] for s in body.json()["skills"]}
            cursor = body.json()["metadata"]["nextCursor"]
            if cursor is None:
                break
        seen: list[str] = []
        cursor, pages, fresh = None, 0, 0
        rng = random.Random(17)
        while True:
            params = {"q": BROAD, "limit": 20, **({"cursor": cursor} if cursor else {})}
            body = http.get("/v1/skills", params=params).json()
            pages += 1
            seen += [s["id"] for s in body["skills"]]
            cursor = body["metadata"]["nextCursor"]
            if cursor is None or pages > 500:
                break
            if offset_only:  # the cursor as the server made it before: the offset alone
                cursor = encode_cursor({"offset": decode_cursor(cursor)["offset"]})
            fresh += 1
            name = f"pdf-excel-chart-{tag}-{fresh}"
            _put(http, token, f"bench/{name}", "1.0.0", skill_archive(name, rng))
    return {
        "pages": pages,
        "published_meanwhile": fresh,
        "matches_before": len(before),
        "seen_twice": len(seen) - len(set(seen)),
        "missed": len(before - set(seen)),
    }


def _p50(http: httpx.Client, requests: list[tuple[str, dict[str, Any]]]) -> float:
    timings = []
    for path, params in requests:
        t = time.perf_counter()
        http.get(path, params=params).raise_for_status()
        timings.append(time.perf_counter() - t)
    return _pct(timings, 0.5)


def page_depth(url: str, queries: int) -> dict[str, float]:
    """First against last page: distinct queries (the server caches repeated answers)."""
    rng = random.Random(23)
    picked = sorted({" ".join(rng.sample(WORDS, 2)) for _ in range(queries)})
    with httpx.Client(base_url=url, timeout=60) as http:
        upto = http.get("/v1/skills", params={"q": picked[0], "limit": 1}).json()
        state = decode_cursor(upto["metadata"]["nextCursor"])
        first = [("/v1/skills", {"q": q, "limit": 20}) for q in picked]
        last, depth = [], []
        for q in picked:
            total = 0
            cursor = None
            while True:  # count the matches once, to aim at the last page
                body = http.get("/v1/skills", params={"q": q, "limit": 100, "cursor": cursor})
                total += len(body.json()["skills"])
                cursor = body.json()["metadata"]["nextCursor"]
                if cursor is None:
                    break
            offset = max(0, (total - 1) // 20 * 20)
            depth.append(offset)
            cursor = encode_cursor({"offset": offset, "upto": state["upto"]})
            last.append(("/v1/skills", {"q": q, "limit": 20, "cursor": cursor}))
        ids = [s["id"] for s in http.get("/v1/skills", params={"limit": 40}).json()["skills"]]
        near_end = http.get("/v1/skills", params={"namespace": "ns9", "limit": 100}).json()
        tail = [s["id"] for s in near_end["skills"]][-40:]  # "ns9/…" ids sort last
        list_first = [
            ("/v1/skills", {"limit": 20, "cursor": encode_cursor({"after": i})}) for i in ids
        ]
        list_last = [
            ("/v1/skills", {"limit": 20, "cursor": encode_cursor({"after": i})}) for i in tail
        ]
        return {
            "search_first_p50_ms": _p50(http, first),
            "search_last_p50_ms": _p50(http, last),
            "search_last_offset_median": sorted(depth)[len(depth) // 2],
            "list_first_p50_ms": _p50(http, list_first),
            "list_last_p50_ms": _p50(http, list_last),
        }


def many_versions(url: str, token: str, count: int) -> dict[str, float]:
    rng = random.Random(29)
    with httpx.Client(base_url=url, timeout=60) as http:
        _put(http, token, "bench/one-version", "1.0.0", skill_archive("one-version", rng))
        for i in range(count):
            _put(
                http, token, "bench/many-versions", f"1.{i}.0", skill_archive("many-versions", rng)
            )
        out = {}
        for label, skill in (("one", "bench/one-version"), ("many", "bench/many-versions")):
            for kind, path in (
                ("metadata", f"/v1/skills/{skill}/metadata"),
                ("versions", f"/v1/skills/{skill}/versions"),
                ("detail", f"/v1/skills/{skill}"),
            ):
                # the same path each time: signed metadata is signed per request, not cached
                out[f"{kind}_{label}_p50_ms"] = _p50(http, [(path, {"limit": 20})] * 60)
        out["metadata_many_bytes"] = len(
            http.get("/v1/skills/bench/many-versions/metadata").content
        )
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=10_000)
    parser.add_argument("--pool", type=int, default=50, help="skills published for real")
    parser.add_argument("--versions", type=int, default=200)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="kiln-registry-pages-"))
    try:
        data = root / "data"
        backends = open_backends(data, None, None)
        signer = load_signer(data, None)
        backends.store.bind_signing_key(signer.key_id)
        t = time.perf_counter()
        pool = real_pool(backends.store, backends.blobs, signer, args.pool)
        bulk_sqlite(backends.store, clones(pool, args.skills - args.pool, signer))
        token = backends.store.create_token("bench")
        backends.close()
        results: dict[str, Any] = {"skills": args.skills, "seed_s": time.perf_counter() - t}
        cluster = Cluster(root, ["--data", str(data)], dict(os.environ), count=1)
        try:
            url = cluster.urls[0]
            results["walk_offset_only"] = walk_while_publishing(url, token, True, "a")
            results["walk_shipped"] = walk_while_publishing(url, token, False, "b")
            results["depth"] = page_depth(url, args.queries)
            results["versions"] = many_versions(url, token, args.versions)
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.skills} skills, one `kiln registry serve` on SQLite + folder")
    for label in ("walk_offset_only", "walk_shipped"):
        w = results[label]
        print(
            f"{label:18} {w['pages']} pages, {w['published_meanwhile']} published meanwhile:"
            f" {w['seen_twice']} seen twice, {w['missed']} of {w['matches_before']} missed"
        )
    d, v = results["depth"], results["versions"]
    print(
        f"search page 1 / last page (offset ~{d['search_last_offset_median']}) p50:"
        f" {d['search_first_p50_ms']:.2f} / {d['search_last_p50_ms']:.2f} ms"
        f" (x{d['search_last_p50_ms'] / d['search_first_p50_ms']:.2f})"
    )
    print(
        f"listing first / last pages p50: {d['list_first_p50_ms']:.2f} /"
        f" {d['list_last_p50_ms']:.2f} ms (x{d['list_last_p50_ms'] / d['list_first_p50_ms']:.2f})"
    )
    for kind in ("metadata", "versions", "detail"):
        one, many = v[f"{kind}_one_p50_ms"], v[f"{kind}_many_p50_ms"]
        print(
            f"{kind:9} p50, 1 vs {args.versions} versions: {one:.2f} / {many:.2f} ms (x{many / one:.2f})"
        )
    print(f"signed metadata at {args.versions} versions: {v['metadata_many_bytes']} bytes")


if __name__ == "__main__":
    main()
