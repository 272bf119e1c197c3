"""GitHub Actions events: who may start a run (write access, never a fork's pull request), and
the task they ask for (the comment that mentions Kiln, or the issue)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agent.errors import UsageError
from agent.injection import external
from skills_registry import json_limits

TRIGGER = re.compile(r"^\s*(/kiln|@kiln)\b[:,]?\s*", re.IGNORECASE)


def task_from_event(path: Path) -> str:
    event = _load(path)
    comment = (event.get("comment") or {}).get("body")
    # A bare "/kiln" asks for the issue or pull request it is posted on: taken below.
    # The comment is the request of whoever posted it (check_event_actor); the issue or pull
    # request it is on may be anyone's, and its title and body are their words: data.
    where = event.get("pull_request") or event.get("issue") or {}
    number = where.get("number", "?")
    if comment and TRIGGER.sub("", comment, count=1).strip():
        task = TRIGGER.sub("", comment, count=1).strip()
        if where.get("title"):
            title = external(f"github:#{number} title", where["title"])
            task += f"\n\n(Context: comment on #{number}, whose title its author wrote:\n{title})"
        if event["comment"].get("path"):
            task += f"\n(The comment is on {event['comment']['path']} line {event['comment'].get('line', '?')}.)"
        return task
    if comment is not None and where.get("title"):
        text = f"{where['title']}\n\n{where.get('body') or ''}".strip()
        quoted = external(f"github:#{number}", text)
        return f"Work on #{number}; its title and body, as its author wrote them:\n{quoted}"
    for key in ("issue", "pull_request"):
        item = event.get(key) or {}
        if item.get("title"):  # the author asked: the event's author_association was checked
            return f"{item['title']}\n\n{item.get('body') or ''}".strip()
    run = event.get("workflow_run") or {}
    if run.get("conclusion") in FAILED_RUNS:  # a failing build: the repository's own workflow
        where = f" on {run['head_branch']}" if run.get("head_branch") else ""
        commit = f" at {str(run['head_sha'])[:12]}" if run.get("head_sha") else ""
        return (
            f'The "{run.get("name") or "CI"}" workflow {FAILED_RUNS[run["conclusion"]]}'
            f"{where}{commit}. Find the cause in this checkout and fix it."
        )
    raise UsageError(
        f"no task found in GitHub event {path}",
        hint="expected a comment body, an issue, a pull request or a failed workflow_run",
    )


WRITE_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")
FAILED_RUNS = {"failure": "failed", "timed_out": "timed out"}  # conclusion -> words


def _actor(event: dict[str, Any]) -> tuple[str, str]:
    """(login, author_association) of whoever asked: the comment's, review's, issue's or pull
    request's author; the association GitHub put in the payload, never anything the text says."""
    for key in ("comment", "review", "issue", "pull_request"):
        item = event.get(key)
        if isinstance(item, dict) and item.get("author_association"):
            login = (item.get("user") or {}).get("login") or ""
            return str(login), str(item["author_association"]).upper()
    sender = event.get("sender") or {}
    return str(sender.get("login") or ""), ""


def _from_fork(event: dict[str, Any]) -> bool:
    pr = event.get("pull_request")
    if not isinstance(pr, dict):
        return False
    head = ((pr.get("head") or {}).get("repo")) or {}
    base = ((pr.get("base") or {}).get("repo")) or {}
    if head.get("fork") is True or (isinstance(pr.get("head"), dict) and not head):
        return True  # a head without a repository: the fork was deleted, its origin unknown
    return bool(head.get("full_name")) and head.get("full_name") != base.get("full_name")


# Events that only someone with write access can start, and that carry no author_association:
# running a workflow by hand (workflow_dispatch), a schedule, a push to the repository, a
# repository_dispatch (a token with write access). Named by GITHUB_EVENT_NAME, else by the keys
# only that payload has.
WRITERS_ONLY = {
    "workflow_dispatch": ("workflow", "inputs"),
    "schedule": ("schedule",),
    "push": ("pusher",),
    "repository_dispatch": ("client_payload",),
}


def _event_name(event: dict[str, Any], name: str) -> str:
    if name:
        return name
    if isinstance(event.get("workflow_run"), dict):
        return "workflow_run"
    for kind, keys in WRITERS_ONLY.items():
        if all(key in event for key in keys):
            return kind
    return ""


def _started_by_a_writer(event: dict[str, Any], name: str) -> bool:
    """An event without an author_association that only a writer (or the repository itself)
    can start. A ``workflow_run`` counts when the run it follows was on this repository's own
    code: one that followed a fork's pull request carries the fork's head."""
    kind = _event_name(event, name)
    if kind in WRITERS_ONLY:
        return True
    if kind == "workflow_run":
        run = event.get("workflow_run") or {}
        head = (run.get("head_repository") or {}).get("full_name")
        here = (event.get("repository") or {}).get("full_name")
        return bool(head) and head == here
    return False


def check_event_actor(path: Path, allowed_users: str = "", event_name: str = "") -> None:
    """Refuse a run that someone without write access asked for, or that comes from a fork.

    A run holds the repository's model keys and a write token; on a public repository anyone
    can comment "/kiln", and a pull request from a fork carries code its author controls.
    ``event_name`` is ``GITHUB_EVENT_NAME`` (empty: told from the payload).
    """
    event = _load(path)
    if event.get("action") == "deleted" and isinstance(event.get("comment"), dict):
        # `on: issue_comment` without `types:` also runs when a comment is deleted: an old
        # "/kiln …" removed from the thread is not a request to run it again
        raise UsageError(
            "refusing a run for a deleted comment",
            hint="limit the workflow to new comments: on: issue_comment: types: [created]",
        )
    login, association = _actor(event)
    allowed = {u.strip().lstrip("@").lower() for u in allowed_users.split(",") if u.strip()}
    if _from_fork(event):
        raise UsageError(
            "refusing a run for a pull request from a fork: its code must never run with this "
            "repository's secrets",
            hint="run Kiln on the fork's own repository, or check the changes out as a maintainer",
        )
    if association in WRITE_ASSOCIATIONS or (login and login.lower() in allowed):
        return
    if not association and _started_by_a_writer(event, event_name):
        return
    who = f"@{login}" if login else "the event's sender"
    raise UsageError(
        f"refusing a run started by {who} (author_association {association or 'unknown'}): "
        "only OWNER, MEMBER or COLLABORATOR may start Kiln",
        hint="add the login to the action's allowed-users input (KILN_ALLOWED_USERS) to trust it",
    )


def _load(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
        event = json_limits.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"GitHub event file not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"GitHub event file {path} is not UTF-8 text "
                         f"(byte 0x{data[exc.start]:02x} at offset {exc.start})") from None  # fmt: skip
    except json.JSONDecodeError as exc:
        raise UsageError(f"GitHub event file {path} is not JSON: {exc}") from None
    except ValueError as exc:  # nested past the parser's stack, a lone surrogate
        raise UsageError(f"GitHub event file {path} is not usable JSON: {exc}") from None
    if not isinstance(event, dict):
        raise UsageError(f"GitHub event file {path} must hold a JSON object")
    _check_shape(event, path)
    return event


# What the code above reads, and the JSON type each must have where present (null is absent):
# a file of another shape is not an event GitHub wrote, and gets one line (exit 2), not a crash.
OBJECTS = ("comment", "review", "issue", "pull_request", "sender", "repository", "workflow_run")
FIELDS = {"body": str, "title": str, "path": str, "author_association": str, "user": dict,
          "head": dict, "base": dict, "repo": dict, "head_repository": dict, "name": str,
          "head_branch": str, "head_sha": str, "conclusion": str, "login": str, "full_name": str}  # fmt: skip


def _check_shape(event: dict[str, Any], path: Path) -> None:
    for key in OBJECTS:
        item = event.get(key)
        if item is None:
            continue
        if not isinstance(item, dict):
            raise UsageError(f"GitHub event file {path}: {key!r} is not an object")
        inner = [(f"{key}.{k}", v) for k, v in item.items()]
        for side in ("head", "base", "user"):
            if isinstance(item.get(side), dict):
                inner += [(f"{key}.{side}.{k}", v) for k, v in item[side].items()]
        for name, value in inner:
            want = FIELDS.get(name.rsplit(".", 1)[-1])
            if want is not None and value is not None and not isinstance(value, want):
                kind = "an object" if want is dict else "a string"
                raise UsageError(f"GitHub event file {path}: {name!r} is not {kind}")
