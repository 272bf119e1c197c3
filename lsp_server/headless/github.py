"""Turn a GitHub Actions event payload into a task: the comment that mentions Kiln, or the issue."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agent.errors import UsageError

TRIGGER = re.compile(r"^\s*(/kiln|@kiln)\b[:,]?\s*", re.IGNORECASE)


def task_from_event(path: Path) -> str:
    try:
        event = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"GitHub event file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"GitHub event file {path} is not JSON: {exc}") from None
    if not isinstance(event, dict):
        raise UsageError(f"GitHub event file {path} must hold a JSON object")
    comment = (event.get("comment") or {}).get("body")
    if comment:
        task = TRIGGER.sub("", comment, count=1).strip()
        where = event.get("pull_request") or event.get("issue") or {}
        if where.get("title"):
            task += f'\n\n(Context: comment on #{where.get("number", "?")} "{where["title"]}")'
        if event["comment"].get("path"):
            task += f"\n(The comment is on {event['comment']['path']} line {event['comment'].get('line', '?')}.)"
        return task
    for key in ("issue", "pull_request"):
        item = event.get(key) or {}
        if item.get("title"):
            return f"{item['title']}\n\n{item.get('body') or ''}".strip()
    raise UsageError(
        f"no task found in GitHub event {path}",
        hint="expected a comment body, an issue or a pull request",
    )
