"""A Claude-Code-compatible ``marketplace.json`` generated from the registry's contents.

Claude Code reads ``{name, owner, metadata, plugins: [{name, source, description, version,
...}]}``. Each registry skill becomes one plugin whose ``source`` points at its archive URL;
``strict: false`` tells Claude Code the entry itself is the manifest (there is no plugin.json).
"""

from __future__ import annotations

from typing import Any

from skills_registry.registry.storage import MetadataStore


def build_marketplace(
    store: MetadataStore, base_url: str, *, name: str = "kiln-registry"
) -> dict[str, Any]:
    base_url = base_url.rstrip("/")
    plugins: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page, cursor = store.search("", cursor=cursor, limit=100)
        for skill in page:
            version = skill.get("latestVersion")
            if not version:
                continue  # every version yanked: nothing to offer
            doc = store.get_version(skill["id"], version) or {}
            frontmatter = doc.get("frontmatter", {})
            entry: dict[str, Any] = {
                "name": f"{skill['namespace']}-{skill['name']}",
                "description": skill["description"],
                "version": version,
                "author": {"name": skill["namespace"]},
                "source": {
                    "source": "url",
                    "url": f"{base_url}/v1/skills/{skill['id']}/versions/{version}/archive",
                },
                "strict": False,
                "skills": ["./"],
                "keywords": ["skill", skill["namespace"]],
                "category": "skills",
            }
            if isinstance(frontmatter.get("license"), str):
                entry["license"] = frontmatter["license"]
            plugins.append(entry)
        if cursor is None:
            break
    return {
        "$schema": "https://anthropic.com/claude-code/marketplace.schema.json",
        "name": name,
        "owner": {"name": name, "url": base_url},
        "metadata": {
            "description": f"Skills published to the Kiln registry at {base_url}",
            "version": "1.0.0",
        },
        "plugins": plugins,
    }
