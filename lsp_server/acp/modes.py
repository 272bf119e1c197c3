"""The session modes `kiln acp` offers (ACP ``SessionModeState``): Kiln's permission modes.

A client switches with ``session/set_mode``; the mode is stored with the session. ``ci`` is for
headless runs: it is listed only for a session already in it (``KILN_ACP_MODE=ci`` or
``_meta``), so the mode state a client shows is the one the session runs in.
"""

from __future__ import annotations

from acp.schema import SessionMode, SessionModeState

from agent.session import Session

MODES: dict[str, tuple[str, str]] = {
    "ask": ("Ask", "Reads are free; edits and commands ask first."),
    "auto-edit": ("Auto-edit", "Edits are applied without asking; commands ask."),
    "yolo": ("Yolo", "Everything is allowed without asking (paths stay in the workspace)."),
}
CI_MODE = ("CI", "No questions: workspace edits apply, risky commands are denied.")


def available(session: Session) -> dict[str, tuple[str, str]]:
    """Mode id -> (name, description) that ``session`` may switch to."""
    return {**MODES, "ci": CI_MODE} if session.mode == "ci" else MODES


def mode_state(session: Session) -> SessionModeState:
    modes = available(session)
    return SessionModeState(
        current_mode_id=session.mode if session.mode in modes else "ask",
        available_modes=[
            SessionMode(id=mode, name=name, description=text)
            for mode, (name, text) in modes.items()
        ],
    )
