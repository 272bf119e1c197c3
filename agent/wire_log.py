"""The requests as sent: each step's wire body (tools, system, messages in the provider's own
format) split into blocks and kept under the session folder, so ``kiln context diff`` measures
where one request stops being a prefix of the next instead of inferring it.

Storage is content-addressed: a block's canonical JSON is written once to ``blocks.jsonl``
under its hash, and each request is one line of ``requests.jsonl`` listing its blocks' labels
and hashes, so a long append-only session costs about one copy of its transcript, not one per
request. ``cache_control`` markers are left out: a moving breakpoint is not content.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.types import Request, canonical_json

FOLDER = "wire"
_lock = threading.Lock()


def strip_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    return value


def neutral_body(request: Request) -> dict[str, Any]:
    """For models without a wire format of their own (the scripted model)."""
    return {
        "tools": [t.to_dict() for t in request.tools],
        "system": request.system,
        "messages": request.messages,
    }


def blocks_of(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, canonical JSON) per block in the order a prompt cache reads the request:
    tools, system, then each message's envelope and content blocks."""
    body = strip_markers(body)
    out: list[tuple[str, str]] = []
    for tool in body.get("tools") or []:
        name = tool.get("name") or (tool.get("function") or {}).get("name", "?")
        deferred = " (defer_loading)" if tool.get("defer_loading") else ""
        out.append((f"tool {name}{deferred}", canonical_json(tool)))
    if "system" in body:
        out.append(("system", canonical_json(body["system"])))
    for i, message in enumerate(body.get("messages") or []):
        role = message.get("role", "?")
        content = message.get("content")
        envelope = {k: v for k, v in message.items() if k != "content"}
        if isinstance(content, list):
            out.append((f"message {i} ({role})", canonical_json(envelope)))
            for j, block in enumerate(content):
                kind = block.get("type", "?") if isinstance(block, dict) else "?"
                out.append((f"message {i} ({role}) block {j} ({kind})", canonical_json(block)))
        else:
            out.append((f"message {i} ({role})", canonical_json(message)))
    return out


@dataclass
class WireRequest:
    step: int
    blocks: list[tuple[str, str]]  # (label, canonical JSON)

    def text(self) -> str:
        return "".join(text for _, text in self.blocks)


class WireLog:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder) / FOLDER

    def record(self, step: int, body: dict[str, Any]) -> None:
        blocks = blocks_of(body)
        self.folder.mkdir(parents=True, exist_ok=True)
        with _lock:
            known = self._known_hashes()
            new: dict[str, str] = {}
            refs = []
            for label, text in blocks:
                digest = hashlib.sha256(text.encode()).hexdigest()[:32]
                if digest not in known and digest not in new:
                    new[digest] = text
                refs.append([label, digest])
            if new:
                _append(self.folder / "blocks.jsonl", [{"h": h, "t": t} for h, t in new.items()])
                self._hashes = known | set(new)
            _append(self.folder / "requests.jsonl", [{"step": step, "blocks": refs}])

    def _known_hashes(self) -> set[str]:
        cached = getattr(self, "_hashes", None)
        if cached is None:
            cached = set(self._blobs())
            self._hashes = cached
        return cached

    def _blobs(self) -> dict[str, str]:
        return {item["h"]: item["t"] for item in _records(self.folder / "blocks.jsonl")}

    def record_changed(self, step: int, body: dict[str, Any], note: str) -> None:
        """The provider changed the request on the way (the embedded model fits it to its
        window): that body replaces the step's, and is kept whole for `kiln context show`."""
        self.record(step, body)
        with _lock:
            _append(self.folder / "sent.jsonl", [{"step": step, "body": body, "note": note}])

    def changed(self, step: int) -> dict[str, Any] | None:
        """``{"body", "note"}`` of a step whose request the provider changed on the way."""
        found = None
        for item in _records(self.folder / "sent.jsonl"):
            if item.get("step") == step:
                found = item
        return found

    def requests(self) -> dict[int, WireRequest]:
        """Every recorded request by step (a step recorded twice keeps its last body)."""
        blobs = self._blobs()
        out: dict[int, WireRequest] = {}
        for item in _records(self.folder / "requests.jsonl"):
            blocks = [(label, blobs.get(h, "")) for label, h in item["blocks"]]
            out[int(item["step"])] = WireRequest(int(item["step"]), blocks)
        return out


def _append(path: Path, records: list[dict[str, Any]]) -> None:
    """Append one JSON line per record. A line a killed process left torn (no newline at the
    end of the file) is ended first, so the new records are not glued to it."""
    with path.open("a+b") as fh:  # writes go to the end whatever is read before
        end = fh.seek(0, 2)
        if end and fh.seek(end - 1) >= 0 and fh.read(1) != b"\n":
            fh.write(b"\n")
        fh.write(b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records))


def _records(path: Path) -> list[dict[str, Any]]:
    """The whole records of a log file; a line torn by a killed process is skipped."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


@functools.lru_cache(maxsize=32)
def _log_for(folder: Path) -> WireLog:
    """One log object per session folder, so its set of stored hashes is read from disk once."""
    return WireLog(folder)


def record(folder: Path, step: int, model: Any, request: Request) -> None:
    """Keep the body ``model`` sends for ``request`` (its ``wire_body``, else a neutral one)."""
    make = getattr(model, "wire_body", None)
    body = make(request) if callable(make) else neutral_body(request)
    _log_for(Path(folder)).record(step, body)


def record_sent(folder: Path, step: int, model: Any) -> None:
    """After the call: what ``model`` says it sent instead of its ``wire_body``, if anything."""
    sent = getattr(model, "sent_body", None)
    changed = sent() if callable(sent) else None
    if changed:
        _log_for(Path(folder)).record_changed(step, changed["body"], str(changed.get("note", "")))


def first_difference(before: WireRequest, after: WireRequest) -> tuple[int, str | None, str | None]:
    """(characters of ``before`` that ``after`` starts with, label of the first differing
    block in ``after``, and in ``before``); labels are None when ``before`` is fully shared."""
    shared = 0
    for i, (label, text) in enumerate(before.blocks):
        if i >= len(after.blocks):
            return shared, "end of request", label
        other_label, other = after.blocks[i]
        if other != text:
            n = 0
            limit = min(len(text), len(other))
            while n < limit and text[n] == other[n]:
                n += 1
            return shared + n, other_label, label
        shared += len(text)
    return shared, None, None
