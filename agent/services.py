"""What tools ask of their session: buffer-aware reads, edits through the host (after
permission), memory proposals and sub-agents. Functions of the session, kept apart so the
session module stays about the turn itself."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from agent.config import AgentConfig
from agent.errors import ToolError
from agent.hosts import DiskHost
from agent.protocols import EditProposal

if TYPE_CHECKING:
    from agent.session import Session


def read_text(session: Session, path: Path) -> str:
    buffered = session.host.read_buffer(path)
    if buffered is not None:
        return buffered
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolError(
            f"{session.workspace.relative(path)} does not exist",
            suggestion="check the path with list_files",
        ) from None
    except OSError as exc:
        raise ToolError(f"cannot read {session.workspace.relative(path)}: {exc.strerror}") from None
    if b"\0" in data[:8192]:
        raise ToolError(f"{session.workspace.relative(path)} is a binary file")
    return data.decode("utf-8", errors="replace")


async def propose_edit(
    session: Session, path: Path, old: str, new: str, *, call_id: str = ""
) -> str:
    rel = session.workspace.relative(path)
    proposal = EditProposal(
        path=rel,
        old_text=old,
        new_text=new,
        proposal_id=uuid.uuid4().hex[:12],
        call_id=call_id,
        meta={"abspath": str(path)},
    )
    name, args = session._edit_calls.pop(call_id, ("write_file", {"path": rel}))
    # The diff is announced first, so a front-end shows it while the permission is asked
    # (and the user sees what was refused, if it is).
    await session.emit(
        "edit",
        id=call_id,
        proposal_id=proposal.proposal_id,
        path=rel,
        old_text=old,
        new_text=new,
    )
    await session._authorise(name, args, call_id, proposal)
    outcome = await session.host.apply_edit(proposal)
    if outcome == "applied" and rel not in session.files_modified:
        session.files_modified.append(rel)
    if outcome in ("applied", "deferred"):
        session.touch(path)
        if session._index is not None or session.state.get("indexed"):
            try:
                session.code_index().update_file(path, new)
            except Exception:  # noqa: BLE001 - the index is a cache; never fail an edit on it
                pass
    return outcome


async def propose_memory(session: Session, text: str, *, call_id: str = "") -> str:
    proposal = {"text": text, "from_external": session.tainted, "turn": session.turn}
    session.memory_proposals.append(proposal)
    await session.emit("memory_proposal", **proposal)
    if session.config.mode == "ci":
        return "recorded as a memory proposal in the run report (ci mode writes no memory files)"
    path = session.memory.append(text)
    return f"remembered in {session.workspace.relative(path)}"


async def run_subagent(session: Session, description: str) -> str:
    config = AgentConfig(
        mode="ask",
        max_steps=min(15, session.config.max_steps),
        max_tokens=session.config.max_tokens,
        subagent=True,
    )
    from agent.session import Session as SessionClass

    child = SessionClass.create(
        session.root,
        host=DiskHost(),
        config=config,
        model=session.model,
        store=session.store,
        index=session._index,
    )
    child.state["parent"] = session.id
    reason = await child.prompt(
        f"{description}\n\nExplore read-only and answer in at most 15 lines with paths and line numbers."
    )
    session.usage = session.usage + child.usage
    session.cost_usd += child.cost_usd
    answer = child.final_text() or f"(the sub-agent stopped: {reason})"
    return f"sub-agent {child.id} ({child.step_count} steps):\n{answer[:4000]}"
