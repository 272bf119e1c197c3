"""A Claude-Code-compatible ``marketplace.json`` generated from the registry's contents.

Claude Code reads ``{name, owner, metadata, plugins: [{name, source, description, version,
...}]}`` and fetches plugins from relative paths, GitHub, git URLs or package registries; it
cannot fetch a tarball, and it refuses relative paths in a marketplace added by URL. So the
served marketplace gives each skill an absolute git source (``gitrepo``: the registry serves
each latest release as a git repository, pinned by commit ``sha``), while
``export_marketplace`` writes a folder with relative sources ``./skills/<ns>/<name>`` (latest
non-yanked versions, safely extracted) next to ``.claude-plugin/marketplace.json``, which
``claude plugin marketplace add FOLDER`` (or a git repository of it) accepts. ``strict: false`` makes the entry the manifest (there is no
plugin.json); the ``kiln`` key (ignored by Claude Code) keeps the registry's archive URL and
hashes so the copy can be checked against the registry.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skills_registry.archive import extract, read_archive
from skills_registry.registry.errors import ArchiveError
from skills_registry.registry.id_rules import SKILL_ID_RE
from skills_registry.registry.storage import BlobStore, MetadataStore


def _latest(store: MetadataStore, left_out: list[str]) -> list[dict[str, Any]]:
    """Each skill's latest version, but for a skill whose id the id rules refuse (one written
    before they refused a trailing newline, ``evil\n/x``), which goes to ``left_out``: its id
    would name a plugin, a git URL and an exported folder."""
    docs: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page, cursor = store.search("", cursor=cursor, limit=100)
        for skill in page:
            if not SKILL_ID_RE.fullmatch(str(skill["id"])):
                left_out.append(str(skill["id"]))
            elif skill.get("latestVersion"):  # every version yanked: nothing to offer
                doc = store.get_version(skill["id"], skill["latestVersion"])
                if doc is not None:
                    docs.append(doc)
        if cursor is None:
            return docs


def build_marketplace(
    store: MetadataStore,
    base_url: str,
    *,
    name: str = "kiln-registry",
    git_commit: Callable[[dict[str, Any]], str] | None = None,
    left_out: list[str] | None = None,
    unreadable: list[str] | None = None,
) -> dict[str, Any]:
    """``git_commit`` given: absolute git sources (served marketplace); else relative paths.
    The ids of skills left out for breaking the id rules are added to ``left_out``, and those
    whose archive cannot be read now to ``unreadable`` (``unreadable_release``)."""
    base_url = base_url.rstrip("/")
    plugins: list[dict[str, Any]] = []
    for doc in _latest(store, left_out if left_out is not None else []):
        source: Any = f"./skills/{doc['namespace']}/{doc['name']}"
        if git_commit is not None:
            try:
                commit = git_commit(doc)
            except ArchiveError as exc:
                unreadable_release(doc, exc, unreadable)
                continue
            source = {
                "source": "url",
                "url": f"{base_url}/git/{doc['namespace']}/{doc['name']}.git",
                "sha": commit,
            }
        entry: dict[str, Any] = {
            "name": f"{doc['namespace']}-{doc['name']}",
            "source": source,
            "description": doc["description"],
            "version": doc["version"],
            "author": {"name": doc["namespace"]},
            "homepage": f"{base_url}/v1/skills/{doc['id']}",
            "keywords": ["skill", doc["namespace"]],
            "category": "skills",
            "strict": False,
            "skills": ["./"],
            "kiln": {
                "id": doc["id"],
                "archive": f"{base_url}/v1/skills/{doc['id']}/versions/{doc['version']}/archive",
                "sha256": doc["archiveSha256"],
                "treeHash": doc["treeHash"],
            },
        }
        license_ = doc.get("frontmatter", {}).get("license")
        if isinstance(license_, str):
            entry["license"] = license_
        plugins.append(entry)
    return {
        "name": name,
        "owner": {"name": name, "url": base_url},
        "metadata": {
            "description": f"Skills published to the Kiln registry at {base_url}",
            "version": "1.0.0",
        },
        "plugins": plugins,
    }


def unreadable_release(doc: dict[str, Any], exc: ArchiveError, into: list[str] | None) -> None:
    """A release whose archive the archive rules refuse now (published before a rule it
    breaks, such as folders differing only by case): no client installs it, so it is left
    out, and the marketplace of every other skill is still served (before, one such archive
    made every request for it a 422)."""
    if into is not None:
        into.append(f"{doc['id']}@{doc['version']} ({exc})")


def export_marketplace(
    store: MetadataStore,
    blobs: BlobStore,
    base_url: str,
    out: Path,
    *,
    name: str = "kiln-registry",
    left_out: list[str] | None = None,
    unreadable: list[str] | None = None,
) -> dict[str, Any]:
    """Write ``out/.claude-plugin/marketplace.json`` and ``out/skills/<ns>/<name>/`` (replaced)."""
    out = Path(out)
    market = build_marketplace(store, base_url, name=name, left_out=left_out)
    skills_dir = out / "skills"
    if skills_dir.exists():
        shutil.rmtree(skills_dir)
    kept = []
    for plugin in market["plugins"]:
        try:
            contents = read_archive(blobs.get(plugin["kiln"]["sha256"]))
        except ArchiveError as exc:
            unreadable_release({**plugin["kiln"], "version": plugin["version"]}, exc, unreadable)
            continue
        extract(contents, out / plugin["source"].removeprefix("./"))
        kept.append(plugin)
    market["plugins"] = kept
    (out / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (out / ".claude-plugin" / "marketplace.json").write_text(
        json.dumps(market, indent=2) + "\n", encoding="utf-8"
    )
    return market
