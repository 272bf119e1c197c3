"""The only way a skill's ``allowed-tools`` widens permissions: the user granted them.

A grant is recorded at install or review (``kiln skills install --user --grant-tools``, or a yes
to the question that shows the list) in the ``grants`` of the skill's entry in the USER's lockfile,
``$KILN_HOME/skills-lock.json``. A project lockfile comes with the repository, like the skills in
it, so its grants are never read. Without a grant, ``allowed-tools`` only narrows (see
``agent.permissions.Permissions._narrowed``).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from skills_registry import config_file, lockfile

LOCK_NAME = "skills-lock.json"


def user_skill_grants(kiln_home: Path) -> dict[str, set[str]]:
    """Installed skill folder (resolved absolute path) -> tool names the user granted it, from
    the user's lockfile; a project skill of the same name is another folder and gets nothing."""
    path = Path(kiln_home) / LOCK_NAME
    try:
        data: Any = config_file.load_json(path, lockfile.MAX_BYTES)  # a FIFO there: no hang
    except (OSError, ValueError):
        return {}
    skills = data.get("skills") if isinstance(data, dict) else None
    if not isinstance(skills, dict):
        return {}
    grants: dict[str, set[str]] = {}
    for entry in skills.values():
        if not isinstance(entry, dict) or not isinstance(entry.get("grants"), list):
            continue
        names = {g for g in entry["grants"] if isinstance(g, str)}
        rel = PurePosixPath(str(entry.get("path") or ""))
        if names and rel.parts and not rel.is_absolute() and ".." not in rel.parts:
            grants[str((Path(kiln_home) / rel).resolve())] = names
    return grants
