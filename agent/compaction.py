"""Tiered compaction: keep a long session inside the model's window without losing what matters.

It runs as a session extension, before each request, when the request reaches ``trigger``
(default 80 %) of the window: (1) drop noise — superseded file reads and large search results
already acted on become stubs; (2) summarise the oldest rounds; (3) a full summary of everything
but the latest round. Whatever the tier, what goes is chosen first and summarised in one model
call. A compaction never runs twice without new messages in between, and a trigger at or below
the target pulls the target under it. Summaries come from the session's model (unless it declares
``writes_summaries = False``, as the embedded one does); when it fails a
deterministic extractive summary is used, and after ``max_failures`` failures in a row the model
is no longer asked (circuit breaker). Whatever the tier, code — not the model — carries forward
verbatim the user's goals, decisions and constraints, files modified, verification status, open
TODOs, ``<skill>`` blocks and identifiers, and the block names the file holding the full text;
what it carries is bounded to a share of the window (``compaction_facts.bounded``: the newest
items, the older counted and left verbatim in those files), so it never outgrows the window.
Every compaction starts a new message epoch in the store and is recorded in ``compactions``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from agent import spend
from agent.compaction_config import CompactionConfig
from agent.compaction_facts import (
    HISTORY_TAG,
    bounded,
    extractive_summary,
    history_block,
    newest,
    note_moved,
    protected_facts,
    removal_note,
    render_message,
    summary_text,
)
from agent.compaction_noise import drop_noise
from agent.compaction_request import (
    SUMMARY_MARKER,
    SUMMARY_SYSTEM,
    continuation,
    standalone,
    worth_continuing,
)
from agent.compaction_store import CompactionRecord, store_epoch
from agent.errors import ContextTooLong
from agent.events import Compacted
from agent.protocols import SessionView
from agent.turn import TurnEnded
from agent.types import Message, ModelReply, Request, canonical_json

__all__ = ["SUMMARY_MARKER", "SUMMARY_SYSTEM", "CompactionConfig", "Compactor"]

SUMMARY_SHARE = 0.1  # of the window, for the summaries of earlier rounds
LOG_LINES = 20  # compaction notes kept in the history block


def estimate_tokens(value: Any) -> int:
    """Planning estimate only: canonical-JSON characters / 4 (measured usage wins when known)."""
    return len(value if isinstance(value, str) else canonical_json(value)) // 4


class Compactor:
    """Session extension; ``before_request`` keeps the status readings fresh and compacts."""

    def __init__(self, config: CompactionConfig | None = None) -> None:
        self.config = (config or CompactionConfig()).validated()
        self.summary_tokens = 0
        self._sized_epoch = -1
        self._sizes: list[int] = []

    def tail_block(self, session: SessionView) -> None:
        """Called just before the status bar is rendered: bring its readings up to date."""
        session.status.sync(
            steps=session.turn.steps,
            max_steps=session.turn.steps + session.turn.budget.steps_left(),
            config=session.config,
            messages=session.transcript.messages,
            state=session.state,
        )
        session.status.budget_note = session.turn.budget.spend_note()

    async def aclose(self) -> None:
        pass

    async def before_request(self, session: SessionView) -> None:
        self.tail_block(session)
        window = int(getattr(session.model, "context_window", 0) or 0)
        session.state["context_window"] = window  # for `kiln context show` percentages
        if not window or len(session.transcript.messages) < 3:
            return
        used = self.request_tokens(session)
        state = self._state(session)
        if used < max(self.config.trigger * window, float(state.get("next_at") or 0)):
            return
        record = await self.compact(session, reason=f"{used} tokens of {window}")
        if record is None:
            # Nothing could go yet (the rounds are all among the kept ones): the next message
            # may change that. Waiting for more content here pushed the next try past the
            # window, and a server that cuts long prompts silently (Ollama) then cut them.
            return
        # The next compaction waits for as much new content as a compaction is meant to free
        # (trigger - target): when the fixed part of the request sits near the trigger, the
        # last one could not free that much, and compacting again now would only rewrite.
        state["next_at"] = record.after_tokens + (self.config.trigger - self.config.target) * window

    def request_tokens(self, session: SessionView) -> int:
        """Estimate of the next request; message sizes are cached (append-only per epoch)."""
        if session.transcript.epoch != self._sized_epoch or len(session.transcript.messages) < len(
            self._sizes
        ):
            self._sized_epoch, self._sizes = session.transcript.epoch, []
        self._sizes += [estimate_tokens(m) for m in session.transcript.messages[len(self._sizes) :]]
        estimate = estimate_tokens(_request_like(session, [])) + sum(self._sizes)
        window = int(getattr(session.model, "context_window", 0) or 0)
        return max(estimate, int(session.status.context_used * window))

    @staticmethod
    def _state(session: SessionView) -> dict[str, Any]:
        return session.state.setdefault("compaction", {"count": 0, "failures": 0, "summaries": []})

    # -- the tiers ----------------------------------------------------------------------------

    async def compact(
        self, session: SessionView, *, reason: str = "manual"
    ) -> CompactionRecord | None:
        """Run the tiers until the request is under ``target``; None when nothing could go or
        nothing was added since the last compaction (compacting it again would only rewrite)."""
        window = int(getattr(session.model, "context_window", 0) or 0) or 200_000
        if not session.transcript.messages:
            return None  # a new session: nothing to compact
        last = self._state(session).get("after")
        if last and last == [session.transcript.epoch, len(session.transcript.messages)]:
            return None
        target = self.config.target * window
        before = self.request_tokens(session)
        messages = [dict(m) for m in session.transcript.messages]
        archive_parts: list[str] = []
        tier, sources = 1, set()
        self.summary_tokens = 0
        messages = drop_noise(
            messages,
            keep_rounds=self.config.keep_rounds,
            min_chars=self.config.noise_min_chars,
            archive_path=self._archive_path(session),
            archive=archive_parts,
        )
        state = self._state(session)
        summaries: list[str] = list(state.get("summaries", []))
        facts: dict[str, list[str]] = {k: list(v) for k, v in state.get("facts", {}).items()}
        head = [b for b in messages[0]["content"] if not _is_history(b)]
        rounds = _rounds(messages)
        keep = max(1, self.config.keep_rounds)
        removed: list[Message] = []

        removed_total = int(state.get("removed", 0))
        acc = bounded(protected_facts(session, [], facts), window)  # grows batch by batch
        fixed = estimate_tokens(_request_like(session, []))
        round_sizes = [sum(estimate_tokens(m) for m in r) for r in rounds]

        def rebuilt() -> list[Message]:
            log = [
                *state.get("log", []),
                removal_note(session.transcript.epoch + 1, removed, "{archive}"),
            ]
            block = history_block(summaries, acc, removed_total + len(removed), log)
            return [{"role": "user", "content": [*head, block]}, *[m for r in rounds for m in r]]

        def size() -> int:
            return fixed + estimate_tokens(rebuilt()[0]) + sum(round_sizes)

        # Choose what goes first, by size, then summarise it in ONE model call: tier 2 takes
        # the oldest rounds until the request fits (budgeting the summary it will get), tier 3
        # everything but the latest round, folding earlier summaries into one.
        reserve = self.config.summary_max_tokens // 2
        while size() + reserve > target and len(rounds) > keep:
            tier = 2
            batch = rounds.pop(0)
            round_sizes.pop(0)
            removed.extend(batch)
            acc = bounded(protected_facts(session, batch, acc), window)
        if size() + reserve > target and (summaries or len(rounds) > 1):
            tier = 3
            while len(rounds) > 1:
                batch = rounds.pop(0)
                round_sizes.pop(0)
                removed.extend(batch)
                acc = bounded(protected_facts(session, batch, acc), window)
        if removed:
            kept = [m for r in rounds for m in r]
            text, used = await self._summarise(session, removed, prior=summaries, kept=kept)
            sources.add(used)
            text = summary_text(text, used, acc)
            if tier == 3:
                summaries = [f"full summary: {text}"]
            else:
                first = removed_total // 2 + 1
                last = (removed_total + len(removed)) // 2
                span = f"round {first}" if first >= last else f"rounds {first}-{last}"
                summaries.append(f"{span}: {text}")
                # tier 2 adds one per compaction: the oldest go once they pass their share
                recent = newest(summaries, SUMMARY_SHARE * window * 4)
                note_moved(acc, "summaries", len(summaries) - len(recent))
                summaries = recent
        if tier == 1 and messages == session.transcript.messages:
            return None
        stubbed = len(archive_parts)
        archive_parts += [render_message(m, i) for i, m in enumerate(removed)]
        new_messages = rebuilt() if tier > 1 else messages
        archive = self._write_archive(session, archive_parts)
        if tier > 1:
            new_messages = rebuilt_with_archive(new_messages, archive)
        note = removal_note(session.transcript.epoch + 1, removed, str(archive))
        if stubbed:
            note += f" ({stubbed} older tool results replaced by stubs)"
        state.update(
            count=int(state.get("count", 0)) + 1,
            summaries=summaries,
            facts=acc,
            removed=removed_total + len(removed),
            log=log_kept(acc, [*state.get("log", []), note]),
        )
        record = CompactionRecord(
            epoch=session.transcript.epoch + 1,
            tier=tier,
            reason=reason,
            before_tokens=before,
            after_tokens=estimate_tokens(_request_like(session, new_messages)),
            removed_messages=len(removed),
            kept_messages=len(new_messages),
            source="+".join(sorted(sources)) or "none",
            archive=str(archive),
            summary_tokens=self.summary_tokens,
        )
        self._switch_epoch(session, new_messages, record)
        state["after"] = [session.transcript.epoch, len(session.transcript.messages)]
        await session.emit(Compacted(**asdict(record)))
        return record

    async def _summarise(
        self,
        session: SessionView,
        batch: list[Message],
        prior: list[str] | None = None,
        kept: list[Message] | None = None,
    ) -> tuple[str, str]:
        """The model's summary, or the extractive one when it fails or the breaker is open."""
        state = self._state(session)
        # A model may decline to write summaries (the embedded 135M one: a summary of a full
        # window took it minutes of prompt evaluation on two cores and read no better)
        writes = bool(getattr(session.model, "writes_summaries", True))
        if writes and int(state.get("failures", 0)) < self.config.max_failures:
            limit = self.config.summary_max_tokens
            # One standalone call covers every removed round: up to half the window of text.
            window = int(getattr(session.model, "context_window", 0) or 0)
            cap = max(60_000, 2 * window)  # characters, ~4 per token
            try:
                reply = None
                if worth_continuing(session.transcript.messages, batch):
                    ask = continuation(session, batch, kept or [], prior, limit)
                    try:
                        reply = await self._ask(session, ask)
                    except (ContextTooLong, TurnEnded):
                        reply = None  # past the window or the cost limit: standalone, below
                if reply is None:
                    reply = await self._ask(session, standalone(batch, prior, limit, cap))
                text = " ".join(
                    b["text"]
                    for b in (reply.message["content"] if reply else [])
                    if b.get("type") == "text"
                ).strip()
                if text:
                    state["failures"] = 0
                    return " ".join(text.split())[:2000], "model"
            except TurnEnded:  # it would cross the cost limit: not the summariser's failure
                return extractive_summary(batch), "extractive"
            except Exception:  # noqa: BLE001 - any summariser failure falls back to extraction
                pass
            state["failures"] = int(state.get("failures", 0)) + 1
        return extractive_summary(batch), "extractive"

    async def _ask(self, session: SessionView, request: Request) -> ModelReply | None:
        """A summary request: a model request like a step's, so it is one of the turn's steps
        and is held to the cost limit the same way (its output capped to what is left)."""
        request_tokens = {**request.to_dict(), "deferred_tools": []}
        held = spend.hold(session, request, lambda: estimate_tokens(request_tokens))
        reply: ModelReply | None = None
        try:
            session.turn.budget.take_step()  # nothing awaited since the checks
            async for item in session.model.stream(request):
                if isinstance(item, ModelReply):
                    reply = item
            if reply is not None:
                self._account(session, reply)
        finally:
            session.turn.release(held)
        return reply

    def _account(self, session: SessionView, reply: ModelReply) -> None:
        """Summaries cost tokens like any request: add them to the session's usage and cost, and
        store them (under step -N for the compaction to epoch N, beside the steps' own rows) so
        `kiln sessions show` and `kiln context show` count them and their cache reads."""
        from agent.providers.pricing import cost_usd, price_for

        model = reply.model or session.model.name
        unpriced = "" if price_for(model) else model
        cost = cost_usd(model, reply.usage)
        session.turn.add_usage(reply.usage, cost, unpriced=unpriced)
        step = -(session.transcript.epoch + 1)
        session.store.record_usage(session.id, step, session.turn.number, model, reply.usage, cost)
        self.summary_tokens += reply.usage.total_input + reply.usage.output_tokens

    # -- persistence ----------------------------------------------------------------------------

    def _archive_path(self, session: SessionView) -> Path:
        return session.store.folder(session.id) / f"compaction-{session.transcript.epoch + 1}.txt"

    def _write_archive(self, session: SessionView, parts: list[str]) -> Path:
        path = self._archive_path(session)
        path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
        return path

    def _switch_epoch(
        self, session: SessionView, messages: list[Message], record: CompactionRecord
    ) -> None:
        epoch = session.transcript.epoch + 1
        store_epoch(session.store, session.id, messages, record, session.state)
        session.transcript.start_epoch(epoch, messages)
        window = int(getattr(session.model, "context_window", 0) or 0)
        session.status.context_used = record.after_tokens / window if window else 0.0
        session.status.reset()
        # the messages were rewritten: a prompt cache can now serve only the frozen prefix
        session.turn.prompt_tokens = estimate_tokens(_request_like(session, []))


def log_kept(facts: dict[str, list[str]], log: list[str]) -> list[str]:
    """The latest ``LOG_LINES`` compaction notes (the older ones counted in ``facts``)."""
    note_moved(facts, "compaction notes", len(log) - LOG_LINES)
    return log[-LOG_LINES:]


def rebuilt_with_archive(messages: list[Message], archive: Path) -> list[Message]:
    first = dict(messages[0])
    first["content"] = [
        {**b, "text": b["text"].replace("{archive}", str(archive))} if _is_history(b) else b
        for b in first["content"]
    ]
    return [first, *messages[1:]]


# -- message helpers ----------------------------------------------------------------------------


def _is_history(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and str(block.get("text", "")).startswith(HISTORY_TAG)


def _rounds(messages: list[Message]) -> list[list[Message]]:
    """The messages after the first, each round starting at a reply with the user messages
    that follow it (its tool results, a prompt). A prompt that got no reply (a cancel while the
    model answered, a provider error) is followed by the next prompt: pairing by position then
    split a reply from its tool results, and a kept part opening with results whose calls went
    is refused by every provider. User messages before the first reply are a round of their own."""
    rounds: list[list[Message]] = []
    for message in messages[1:]:
        if not rounds or message.get("role") == "assistant":
            rounds.append([message])
        else:
            rounds[-1].append(message)
    return rounds


def _request_like(session: SessionView, messages: list[Message]) -> dict[str, Any]:
    request = session.build_request()
    # Deferred tools are left out: no provider puts their schemas in the model's context
    # before a tool_search loads them (and then they are counted in the transcript).
    return {**request.to_dict(), "deferred_tools": [], "messages": messages}
