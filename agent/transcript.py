"""The trajectory of one session: its messages in the current epoch, appended and persisted.

Append-only within an epoch (a compaction replaces it as a whole with ``start_epoch``), so a
resumed session replays byte-identical requests.
"""

from __future__ import annotations

from typing import Any

from agent.session_store import SessionStore
from agent.types import Message


class Transcript:
    def __init__(
        self, store: SessionStore, session_id: str, messages: list[Message], epoch: int
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.messages = messages
        self.epoch = epoch

    def append(self, message: Message, state: Any = None) -> None:
        """Persist first, then keep: a failed write never leaves an unsaved message in memory.
        ``state``: the session's state, stored in the same transaction."""
        seq = len(self.messages)
        try:
            self.store.append_message(self.session_id, self.epoch, seq, message, state)
        except UnicodeEncodeError:  # a file name or output that is not UTF-8: kept as \xNN
            message = utf8_text(message)
            self.store.append_message(self.session_id, self.epoch, seq, message, state)
        self.messages.append(message)

    def start_epoch(self, epoch: int, messages: list[Message]) -> None:
        """Adopt a compacted trajectory the store already holds as ``epoch``."""
        self.epoch, self.messages = epoch, messages

    def close_dangling(self, reason: str) -> None:
        """A cancelled turn may leave tool_use blocks unanswered; answer them so the
        trajectory stays valid for the next request."""
        if not self.messages or self.messages[-1].get("role") != "assistant":
            return
        pending = [b for b in self.messages[-1]["content"] if b.get("type") == "tool_use"]
        if pending:
            self.append({"role": "user", "content": [not_run(b["id"], reason) for b in pending]})

    def final_text(self) -> str:
        """The text of the last assistant message that has any."""
        for message in reversed(self.messages):
            if message["role"] == "assistant":
                texts = [b["text"] for b in message["content"] if b.get("type") == "text"]
                if texts:
                    return "\n".join(texts)
        return ""


def utf8_text(value: Any) -> Any:
    """``value`` with every string made valid UTF-8. Python reads a non-UTF-8 file name (or
    command output) as lone surrogates, which neither the store nor a provider's JSON accepts;
    the bytes are spelled ``\\xNN`` instead, as the index's notices spell such names."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            pass
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate that is no escaped byte
            return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {utf8_text(k): utf8_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [utf8_text(v) for v in value]
    return value


def not_run(call_id: str, reason: str, *, ran: bool = False) -> dict[str, Any]:
    """The result of a tool call the end of a turn stopped, before it ran or (``ran``) while
    it ran."""
    return {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": stopped_text(reason, ran=ran),
        "is_error": True,
    }


def stopped_text(reason: str, *, ran: bool) -> str:
    if ran:
        return f"stopped while it ran: turn ended ({reason}); it may have done part of its work"
    return f"not run: turn ended ({reason})"
