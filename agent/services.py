"""What tools ask of their session (the ``ToolServices`` a tool's context carries):
buffer-aware reads, edits through the tool runner, the TODO plan, memory proposals, the code
index, session search and sub-agents. Each service is given only the parts it uses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent.context import ContextAssembler
from agent.errors import ToolError
from agent.events import AgentEvent, MemoryProposed, PlanUpdated
from agent.memory import Memory
from agent.protocols import Host
from agent.session_store import SessionStore
from agent.status import StatusBar
from agent.tool_runner import ToolRunner
from agent.turn import TurnState
from agent.workspace import Workspace, read_regular
from kiln_errors.shown import shown


class SessionServices:
    def __init__(
        self,
        *,
        session_id: str,
        workspace: Workspace,
        host: Host,
        runner: ToolRunner,
        context: ContextAssembler,
        memory: Memory,
        turn: TurnState,
        status: StatusBar,
        store: SessionStore,
        state: dict[str, Any],
        emit: Callable[[AgentEvent], Awaitable[None]],
        spawn: Callable[[str, str], Awaitable[str]],
        index: Any = None,
    ) -> None:
        self.id = session_id
        self.root = workspace.root
        self.workspace = workspace
        self.command_env: dict[str, str] = {}
        self.sandbox: Any = None  # set by agent.sandbox.attach
        self._host = host
        self._runner = runner
        self._context = context
        self._memory = memory
        self._turn = turn
        self._status = status
        self._store = store
        self._state = state
        self._emit = emit
        self._spawn = spawn
        self._index = index

    def read_text(self, path: Path, name: str = "") -> str:
        """The editor's unsaved text when the host has it, else the file (text only). Errors
        call it ``name``, the path as the model asked for it: ``path`` is resolved, and a link
        the checkout ships (``README.md``) may lead to a file whose name holds an instruction."""
        buffered = self._host.read_buffer(path)
        if buffered is not None:
            return buffered
        rel = shown(name or self.workspace.relative(path))
        try:
            data = read_regular(path, [self.workspace.root, *self.workspace.read_roots])
        except FileNotFoundError:
            raise ToolError(
                f"{rel} does not exist", suggestion="check the path with list_files"
            ) from None
        except OSError as exc:
            raise ToolError(
                f"cannot read {rel}: {exc.strerror}",
                suggestion="read a FIFO, device or huge file with a command (head, sed -n)",
            ) from None
        if b"\0" in data[:8192]:
            raise ToolError(f"{rel} is a binary file")
        return data.decode("utf-8", errors="replace")

    def read_denied(self, path: str | Path) -> bool:
        return self._runner.permissions.read_denied(str(path))

    def network_granted(self, call_id: str) -> bool:
        return self._runner.command_grants.pop(call_id, False)

    def touch(self, path: Path) -> None:
        """The agent looked at ``path``: load the memory files of directories new to it."""
        self._context.add(*self._memory.blocks_for(path))

    async def propose_edit(self, path: Path, old: str, new: str, *, call_id: str = "") -> str:
        outcome = await self._runner.propose_edit(path, old, new, call_id)
        if outcome in ("applied", "deferred"):
            self.touch(path)
            if self._index is not None or self._state.get("indexed"):
                try:
                    self.code_index().update_file(path, new)
                except Exception:  # noqa: BLE001 - the index is a cache; never fail an edit on it
                    pass
        return outcome

    async def set_todos(self, items: list[dict[str, Any]]) -> None:
        self._status.todos = items
        self._state["todos"] = items
        await self._emit(PlanUpdated(entries=items))

    async def propose_memory(self, text: str, *, call_id: str = "") -> str:
        tainted, turn = self._turn.tainted, self._turn.number
        self._turn.memory_proposals.append({"text": text, "from_external": tainted, "turn": turn})
        await self._emit(MemoryProposed(text=text, from_external=tainted, turn=turn))
        if self._runner.permissions.mode == "ci":
            return (
                "recorded as a memory proposal in the run report (ci mode writes no memory files)"
            )
        path = self._memory.append(text)
        return f"remembered in {self.workspace.relative(path)}"

    async def run_subagent(self, description: str, call_id: str = "") -> str:
        return await self._spawn(description, call_id)

    def use_index(self, index: Any) -> None:
        """Share an index the host keeps fresh (it then need not be updated here)."""
        self._index = index
        self._state["indexed"] = True

    @property
    def index(self) -> Any:
        """The code index if one is open, else None (never opens one)."""
        return self._index

    def code_index(self) -> Any:
        if self._index is None:
            from indexer import Index

            self._index = Index(self.root)
        if not self._state.get("indexed"):
            self._index.update()
            self._state["indexed"] = True
        return self._index

    def search_sessions(self, query: str, limit: int) -> list[dict[str, Any]]:
        hits = self._store.search(query, self.root, limit)
        return [h for h in hits if h["session_id"] != self.id]

    def redact(self, text: str) -> str:
        return self._runner.redact(text)

    def announce_tools(self, tools: list[Any]) -> list[Any]:
        return self._runner.announce(tools)
