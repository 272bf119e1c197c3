"""One turn of a session, as ``agent.loop.run_turn`` drives it (``agent.protocols.TurnDriver``).

``Session.prompt`` makes a ``SessionTurn`` for each user turn. It holds what only that turn
needs (where it began and what it was asked, for ``agent.refused_turn``; why a limit stopped it)
and does each step of the loop through the session's parts: the prompt and the tail go into the
transcript, a request to the model (``agent.model_call``), the tool calls to the runner, and at
the end the turn's counters, declared tools and memory are saved with the session. The session
is typed loosely, as ``agent.model_call`` types it: ``agent.session`` imports this module, not
the other way round.
"""

from __future__ import annotations

from typing import Any

from agent import declared_tools, model_call, refused_turn, spend
from agent.context import NOTES_KEPT, mode_block
from agent.errors import ContextTooLong
from agent.events import ErrorReported, StatusNote, TurnDone
from agent.overflow import compact_after_overflow
from agent.types import Block, ModelReply, StopReason, Usage

MODE_TOLD = "mode_told"  # state: the permission mode the model's context states


def _whole_text(text: str) -> str:
    """``text`` with half a surrogate pair (``\\ud83d`` alone, as a front-end may pass on)
    replaced by U+FFFD and a pair that came as two halves joined: SQLite stores UTF-8 only, and
    a title it refused failed the turn and left the session unlisted."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class SessionTurn:
    """What the loop drives for one turn of ``session`` (an ``agent.session.Session``)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.config = session.config
        self._stop_note = ""  # why a limit ended the turn (``note_stop``)
        self._start: tuple[int, int, int] | None = None  # epoch, message, tail blocks
        self._prompt: list[Block] = []  # what the turn was asked with
        self._notes_later: list[str] = []  # kept notes delivered after the turn's first message

    @property
    def cancel_reason(self) -> StopReason:
        """Why the turn was cancelled (``Session.cancel``): "cancelled", or the time limit."""
        return self.session.cancel_reason

    def begin_turn(self, prompt: list[Block]) -> None:
        session = self.session
        session.turn.begin()
        # A process killed mid-tool left a tool call unanswered: answer it, or no provider
        # accepts the trajectory again.
        session.transcript.close_dangling("interrupted: Kiln stopped before the tool finished")
        refused_turn.drop(session)  # a turn the provider declined goes before the next is sent
        if not session.state.get("title"):  # the user's words, not an attachment's markup
            texts = [b["text"] for b in prompt if b.get("type") == "text"]
            said = [t for t in texts if not t.lstrip().startswith("<reference ")]
            session.state["title"] = _whole_text(next(iter(said or texts), ""))[:80]
            session.store.update(session.id, title=session.state["title"])
        told = session.state.setdefault(MODE_TOLD, session.mode)  # the mode the model was told
        if told != session.mode:  # switched by an editor, or by a resume with --mode
            session.context.add(mode_block(session.mode))
            session.state[MODE_TOLD] = session.mode
        epoch, at = session.transcript.epoch, len(session.transcript.messages)
        self._start = (epoch, at, self._append_with_tail([], prompt))
        self._prompt = list(prompt)

    def check_limits(self) -> None:
        model = str(getattr(self.session.model, "model", "") or "")
        self.session.turn.check_limits(self.config, model)

    async def step(self) -> ModelReply:
        """One model request; a request the provider finds too long is compacted and sent once
        more (``agent.overflow``)."""
        try:
            return await model_call.request_reply(self.session)
        except ContextTooLong as exc:
            if not await compact_after_overflow(self.session, exc):
                raise
            self.check_limits()  # the refused request was a step: asking again may be past one
            return await model_call.request_reply(self.session)

    async def run_tools(self, calls: list[Block]) -> list[Block]:
        """Run a step's tool calls together and append their results with the next tail (or,
        cancelled meanwhile, the results of those that ran)."""
        session = self.session
        transcript = session.transcript
        results = await session.runner.run_all(
            calls,
            session.services,
            lambda ran: transcript.append({"role": "user", "content": ran}),
            reason=lambda: session.cancel_reason,
        )
        if session.turn.files_modified != session.state.get("files_modified", []):
            # stored now, not at the turn's end: a process killed later in the turn keeps them
            session.state["files_modified"] = list(session.turn.files_modified)
            session.store.update(session.id, state=session.state)
        # A refused turn leaves the conversation: a note it carried goes to the next one then.
        self._notes_later.extend(session.state.get(NOTES_KEPT, []))
        self._append_with_tail(results, [])
        return list(results)

    def _append_with_tail(self, before: list[Block], after: list[Block]) -> int:
        """Append a user message with the tail between ``before`` and ``after``; the number of
        tail blocks. Notes kept for the model (``Session.landed_late``) are stored as delivered
        with the message that carries them: a process killed before the turn's end stored its
        state delivered them again to the session resumed elsewhere."""
        session = self.session
        delivering = bool(session.state.get(NOTES_KEPT))
        tail = session.context.tail(session, with_status=session.turn.step_count > 0)
        message = {"role": "user", "content": [*before, *tail, *after]}
        # one transaction: a process killed between two writes delivered the note again
        session.transcript.append(message, session.state if delivering else None)
        return len(tail)

    async def note_stop(self, detail: str) -> None:
        self._stop_note = detail  # stored at the turn's end, after its last message
        await self.session.emit(StatusNote(text=detail))

    async def provider_failed(self, exc: Exception) -> None:
        session = self.session
        usage = getattr(exc, "usage", None)
        if isinstance(usage, Usage) and usage != Usage():
            model = str(getattr(session.model, "model", "") or session.model.name)
            spend.record(session, model, usage)
        text = getattr(exc, "partial_text", "") or ""
        if text:
            session.transcript.append(
                {"role": "assistant", "content": [{"type": "text", "text": text}]}
            )
        await session.emit(ErrorReported(message=str(exc), hint=getattr(exc, "hint", "")))

    async def end_turn(self, reason: StopReason) -> None:
        session = self.session
        session.transcript.close_dangling(reason)
        refused_turn.mark(session, reason, self._start, self._prompt, self._notes_later)
        if self._stop_note:  # a load shows why the turn stopped, as the live turn did
            messages = session.transcript
            seq = len(messages.messages)
            session.store.record_stop(session.id, messages.epoch, seq, self._stop_note)
            self._stop_note = ""
        # a call the limit or a cancel cut short ends for the host too (no spinner left running)
        await session.close_open_calls(reason)
        session.state.update(session.turn.saved(), deferred=list(session.runner.deferred))
        session.state[declared_tools.STATE_KEY] = declared_tools.saved(session.runner)
        session.state.update(session.memory.saved())
        session.state["context_used"] = session.status.context_used  # measured: resumed from it
        session.state["tool_calls"] = dict(session.status.calls)  # the session's, past compactions
        session.store.update(session.id, state=session.state, status="idle")
        await session.emit(TurnDone(stop_reason=reason))
