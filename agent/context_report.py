"""Seeing the context: rebuild the exact request a step sent, break it down by component, and
find where one request stopped sharing a prefix with the one before it (and why).

Everything is reconstructed from the session store: a ``requests`` row holds the prefix JSON
(system + tools), the message epoch and how many messages were sent, and messages are
append-only within an epoch, so the first ``message_count`` messages of that epoch are exactly
what the model saw. Token figures are estimates (canonical-JSON characters / 4) unless the
``usage`` table has measured numbers for that step, which are then shown next to them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agent.compaction_store import compactions
from agent.errors import UsageError
from agent.providers.scripted import common_prefix_len
from agent.types import Message, canonical_json
from agent.wire_log import WireLog, WireRequest, first_difference

DEFAULT_WINDOW = 200_000
TAGS = (
    ("<memory", "memory"),
    ("<skills", "skills"),
    ("<skill", "skills"),
    ("<environment", "environment"),
    ("<agent_status", "status"),
    ("<compacted_history", "compacted history"),
    ("<discovered_tools", "tools"),
)
COMPONENTS = (
    "system", "tools", "memory", "skills", "environment", "history",
    "compacted history", "tool results", "status", "reserve",
)  # fmt: skip


def tokens(text: str) -> int:
    return len(text) // 4


@dataclass
class RequestView:
    """One request as the model received it (provider-neutral; cache markers not shown)."""

    session_id: str
    step: int
    turn: int
    epoch: int
    system: str
    tools: list[dict[str, Any]]
    deferred: list[str]
    messages: list[Message]
    max_tokens: int
    usage: dict[str, Any] | None = None
    sent_note: str = ""  # the provider changed the request on the way: how (then shown as sent)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def segments(self) -> list[tuple[str, str]]:
        """The request linearised in the order a prompt cache reads it: tools, system, messages.

        Deferred tools are announced with ``defer_loading`` and sit outside the cached prefix,
        so they are not part of it here either.
        """
        out = [(f"tool {t['name']}", canonical_json(t)) for t in self.tools]
        out.append(("system prompt", self.system))
        for i, m in enumerate(self.messages):
            for j, block in enumerate(m.get("content", [])):
                out.append((f"message {i} ({m.get('role')}) block {j}", canonical_json(block)))
        return out

    def text(self) -> str:
        return "".join(s for _, s in self.segments())


@dataclass
class Component:
    name: str
    tokens: int
    percent: float


@dataclass
class Budget:
    window: int
    components: list[Component]
    estimated_input: int
    measured_input: int | None
    note: str = "tokens estimated as characters / 4"
    cache: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rows(store: Any, session_id: str) -> list[dict[str, Any]]:
    store.get(session_id)  # SessionNotFound with a hint when the id is wrong
    rows = store.requests(session_id)
    if not rows:
        raise UsageError(
            f"session {session_id} has no recorded requests", hint="run a prompt in it first"
        )
    return rows


def select_step(
    store: Any,
    session_id: str,
    *,
    turn: int | None = None,
    step: int | None = None,
    first: bool = False,
) -> int:
    """The step number for ``--step``, ``--turn`` (its last request, or first) or the latest."""
    rows = _rows(store, session_id)
    if step is not None:
        if not any(r["step"] == step for r in rows):
            raise UsageError(
                f"session {session_id} has no step {step}",
                hint=f"steps run from {rows[0]['step']} to {rows[-1]['step']}",
            )
        return step
    if turn is not None:
        steps = [r["step"] for r in rows if r["turn"] == turn]
        if not steps:
            turns = sorted({r["turn"] for r in rows})
            raise UsageError(
                f"session {session_id} has no turn {turn}",
                hint=f"turns: {', '.join(map(str, turns))}",
            )
        return steps[0] if first else steps[-1]
    return int(rows[-1]["step"])


def request_at(store: Any, session_id: str, step: int) -> RequestView:
    """The request of ``step`` as the model received it: rebuilt from the store, or, when the
    provider changed it on the way (the embedded model fits it to its window), as sent."""
    row = next(r for r in _rows(store, session_id) if r["step"] == step)
    messages = store.messages(session_id, row["epoch"])
    usage = {u["step"]: u for u in store.usage(session_id)}
    view = _view(session_id, row, messages, usage)
    changed = WireLog(store.folder(session_id)).changed(step)
    if changed is not None:
        chat = list(changed["body"].get("messages") or [])
        if chat and chat[0].get("role") == "system":
            view.system = str(chat.pop(0).get("content", ""))
        view.messages = [
            {
                "role": m.get("role", "user"),
                "content": [{"type": "text", "text": m.get("content", "")}],
            }
            for m in chat
        ]
        view.sent_note = str(changed.get("note", ""))
    return view


def all_requests(store: Any, session_id: str) -> list[RequestView]:
    """Every request of the session, loading each epoch's messages once."""
    rows = _rows(store, session_id)
    usage = {u["step"]: u for u in store.usage(session_id)}
    epochs: dict[int, list[Message]] = {}
    for row in rows:
        if row["epoch"] not in epochs:
            epochs[row["epoch"]] = store.messages(session_id, row["epoch"])
    return [_view(session_id, row, epochs[row["epoch"]], usage) for row in rows]


def _view(
    session_id: str, row: dict[str, Any], messages: list[Message], usage: dict[int, Any]
) -> RequestView:
    return RequestView(
        session_id=session_id,
        step=row["step"],
        turn=row["turn"],
        epoch=row["epoch"],
        system=row["prefix"]["system"],
        tools=row["prefix"]["tools"],
        deferred=row["deferred"],
        messages=messages[: row["message_count"]],
        max_tokens=row["max_tokens"],
        usage=usage.get(row["step"]),
    )


def _classify(message: Message, block: dict[str, Any]) -> str:
    if block.get("type") == "tool_result":
        content = block.get("content")
        return (
            "skills" if isinstance(content, str) and "<skill" in content[:400] else "tool results"
        )
    if block.get("type") == "text" and message.get("role") == "user":
        head = str(block.get("text", "")).lstrip()
        for tag, name in TAGS:
            if head.startswith(tag):
                return name
    return "history"


def budget(view: RequestView, window: int = DEFAULT_WINDOW) -> Budget:
    sizes = dict.fromkeys(COMPONENTS, 0)
    sizes["system"] = tokens(view.system)
    sizes["tools"] = tokens(canonical_json(view.tools))
    for m in view.messages:
        for block in m.get("content", []):
            sizes[_classify(m, block)] += tokens(canonical_json(block))
    sizes["reserve"] = view.max_tokens
    estimated = sum(v for k, v in sizes.items() if k != "reserve")
    measured = None
    if view.usage:
        u = view.usage
        measured = u["input_tokens"] + u["cache_read_tokens"] + u["cache_write_tokens"]
    return Budget(
        window=window,
        components=[Component(k, v, round(100 * v / window, 2)) for k, v in sizes.items()],
        estimated_input=estimated,
        measured_input=measured,
    )


def cache_share(store: Any, session_id: str) -> dict[str, Any]:
    """Share of input that was a cache-eligible prefix: estimated from the requests themselves
    (each one's common prefix with the one before) and measured from the usage table."""
    views = all_requests(store, session_id)
    eligible = total = 0
    previous = ""
    for view in views:
        current = view.text()
        eligible += tokens(current[: common_prefix_len(previous, current)]) if previous else 0
        total += tokens(current)
        previous = current
    usage = store.usage(session_id)
    measured_total = sum(
        u["input_tokens"] + u["cache_read_tokens"] + u["cache_write_tokens"] for u in usage
    )
    measured_read = sum(u["cache_read_tokens"] for u in usage)
    return {
        "requests": len(views),
        "prefix_tokens": eligible,
        "input_tokens": total,
        "prefix_share": round(eligible / total, 4) if total else 0.0,
        "measured_cache_read_share": round(measured_read / measured_total, 4)
        if measured_total
        else None,
    }


@dataclass
class PrefixDiff:
    step: int
    previous_step: int | None
    shared_tokens: int
    total_tokens: int
    share: float
    diverges_at: str  # the segment where the bytes first differ, or "" when fully shared
    cause: str
    measured: bool = False  # compared the recorded wire bodies (else rebuilt from the store)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def prefix_diff(store: Any, session_id: str, step: int) -> PrefixDiff:
    """Where ``step`` stopped sharing a prefix with the request before it, and why.

    Measured on the wire bodies the session recorded (tools, system, messages as sent, in the
    provider's format) when they exist; sessions from before the wire log are rebuilt from
    the store.
    """
    rows = _rows(store, session_id)
    steps = [r["step"] for r in rows]
    current = request_at(store, session_id, step)
    index = steps.index(step)
    wire = WireLog(store.folder(session_id)).requests()
    if index > 0 and step in wire and steps[index - 1] in wire:
        previous = request_at(store, session_id, steps[index - 1])
        before, after = wire[steps[index - 1]], wire[step]
        shared, now, was = first_difference(before, after)
        where = "" if now is None else (now if now == was else f"{now} (previously {was})")
        total = len(after.text())
        return PrefixDiff(
            step=step,
            previous_step=previous.step,
            shared_tokens=tokens(after.text()[:shared]),
            total_tokens=tokens(after.text()),
            share=round(shared / total, 4) if total else 0.0,
            diverges_at=where,
            cause=_cause(store, previous, current, where, wire_labels=(before, after)),
            measured=True,
        )
    cur_segments = current.segments()
    cur_text = "".join(s for _, s in cur_segments)
    if index == 0:
        return PrefixDiff(step, None, 0, tokens(cur_text), 0.0, "", "first request of the session")
    previous = request_at(store, session_id, steps[index - 1])
    prev_text = previous.text()
    shared = common_prefix_len(prev_text, cur_text)
    where = ""
    if shared < len(prev_text):
        now, was = _segment_at(cur_segments, shared), _segment_at(previous.segments(), shared)
        where = now if now == was else f"{now} (previously {was})"
    return PrefixDiff(
        step=step,
        previous_step=previous.step,
        shared_tokens=tokens(cur_text[:shared]),
        total_tokens=tokens(cur_text),
        share=round(shared / len(cur_text), 4) if cur_text else 0.0,
        diverges_at=where,
        cause=_cause(store, previous, current, where),
    )


def _segment_at(segments: list[tuple[str, str]], offset: int) -> str:
    """Name of the segment holding character ``offset`` (the end, if past it)."""
    start = 0
    for name, text in segments:
        if start + len(text) > offset:
            return name
        start += len(text)
    return "end of request"


def _cause(
    store: Any,
    previous: RequestView,
    current: RequestView,
    where: str,
    wire_labels: tuple[WireRequest, WireRequest] | None = None,
) -> str:
    if not where:
        return "append-only: the previous request, as sent, is a prefix of this one"
    if wire_labels is not None and where.startswith("tool ") and current.epoch == previous.epoch:
        before, after = (
            {k[5:]: v for k, v in w.blocks if k.startswith("tool ")} for w in wire_labels
        )
        return _tool_list_change(before, after)
    if current.epoch != previous.epoch:
        records = [r for r in compactions(store, current.session_id) if r["epoch"] == current.epoch]
        if records:
            r = records[0]
            return (
                f"compaction to epoch {r['epoch']} (tier {r['tier']}, {r['removed_messages']} "
                f"messages removed, {r['before_tokens']} -> {r['after_tokens']} tokens; full text "
                f"in {r['archive']})"
            )
        return (
            f"message epoch changed {previous.epoch} -> {current.epoch} without a compaction record"
        )
    if current.tools != previous.tools:
        return _tool_list_change(
            {t["name"]: t for t in previous.tools}, {t["name"]: t for t in current.tools}
        )
    if current.system != previous.system:
        return "the system prompt changed"
    return f"an already-sent message was rewritten ({where}) with no compaction: a prefix-stability bug"


def _tool_list_change(before: dict[str, Any], after: dict[str, Any]) -> str:
    """How two tool lists (name -> definition, in request order) differ."""
    added = [n for n in after if n not in before]
    removed = [n for n in before if n not in after]
    changed = [n for n in after if n in before and after[n] != before[n]]
    parts = [
        f"added {added}" if added else "",
        f"removed {removed}" if removed else "",
        f"changed {changed}" if changed else "",
        "reordered" if not (added or removed or changed) else "",
    ]
    return "the tool list changed: " + ", ".join(p for p in parts if p)
