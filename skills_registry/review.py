"""The review summary of a version document, as `kiln skills info` shows it before installing.

The document is signed, but a registry holding the key still chooses its shapes, so every
field is read defensively. An install never relies on it: ``verified.recomputed_review`` builds
the summary it asks about from the verified archive's own bytes.
"""

from __future__ import annotations

from typing import Any

from skills_registry.skill import parse_allowed_tools


def allowed_tools_list(value: Any) -> list[str]:
    """``allowed-tools`` as a list ("Bash Write" and ["Bash", "Write"] alike)."""
    if isinstance(value, str):  # "Bash(git status:*)" is one entry, as the agent reads it
        return parse_allowed_tools(value)
    if isinstance(value, list):
        return [str(t) for t in value if str(t).strip()]
    return []


def review_summary(doc: dict[str, Any]) -> dict[str, Any]:
    """What a person should see before saying yes: the facts, not the registry's opinion.

    From a signed document, whose shapes a registry holding the key still chooses: anything
    not of the expected type is left out or zero, never a traceback."""
    front = _object(doc.get("frontmatter"))
    scan = _object(doc.get("scan"))
    files: list[dict[str, Any]] = [
        {"path": str(f.get("path")), "size": _int(f.get("size"))}
        for f in _objects(doc.get("files"))
    ]
    skill_md = next((f["size"] for f in files if f["path"] == "SKILL.md"), 0)
    size = _int(doc.get("unpackedSize"))
    return {
        "id": doc["id"],
        "version": doc["version"],
        "description": str(doc.get("description", "")),
        "files": files,
        "scripts": [str(p) for p in scan.get("scripts") or [] if isinstance(p, str)],
        "allowedTools": front.get("allowed-tools"),
        "findings": [
            {k: str(f.get(k, "")) for k in ("severity", "rule", "path", "message")}
            | {"line": _int(f.get("line"))}
            for f in _objects(scan.get("findings"))
        ],
        "status": str(doc.get("status", "active")),
        "statusReason": str(doc.get("statusReason", "")),
        "sizeBytes": size,
        "tokens": {"skillMd": skill_md // 4, "total": size // 4},
    }


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _objects(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
