"""The slash commands `kiln acp` offers (ACP ``available_commands_update``): built-ins and skills.

A client lists them when the user types ``/``, then sends the command as the prompt's text
(``/deploy to staging``). The built-ins are the terminal chat's and `kiln lsp`'s own
(``/compact``, ``/context``, ``/model``; ``lsp_server.acp.builtins`` runs them, without the
model). A prompt whose first text starts with ``/NAME``, NAME a skill the session offers,
starts the turn with that skill's instructions loaded, as `kiln lsp`'s composer does
(``kiln/skills/use``): the skill's block, then the rest of the text. Any other ``/…`` text
(a path, a command Kiln does not offer) reaches the model as typed. The skills are the ones the
model's own catalog lists (``session.skills``, re-read as skills are installed), so the list is
sent when a session is created or loaded and again after a turn when it has changed.
"""

from __future__ import annotations

import re
from typing import Any

from agent.session import Session
from lsp_server.core.prompts import skill_block
from skills_registry.skill import Skill

INPUT_HINT = "what to do with it"
# name -> (description, input hint or None for a command that takes no input)
BUILTINS: dict[str, tuple[str, str | None]] = {
    "compact": ("Compact the session's context now", None),
    "context": ("Show how the context window is spent", None),
    "model": ("Show the session's model and the ones offered, or switch to another",
              "a model id to switch to; nothing to list them"),
}  # fmt: skip
_COMMAND = re.compile(r"\s*/(\S+)(?:\s+(.*))?\Z", re.DOTALL)


class Commands:
    """What each session's client was last told, so an unchanged list is not sent again."""

    def __init__(self) -> None:
        self.sent: dict[str, list[dict[str, Any]]] = {}  # session id -> the commands sent

    def update(self, session: Session, *, again: bool = False) -> dict[str, Any] | None:
        """The ``available_commands_update`` for ``session``, or None when the client has it
        (``again``: a client loading the session starts over, with none)."""
        commands = [
            {"name": name, "description": about, **({"input": {"hint": hint}} if hint else {})}
            for name, (about, hint) in BUILTINS.items()
        ] + [
            {"name": skill.name, "description": skill.description, "input": {"hint": INPUT_HINT}}
            for skill in sorted(_skills(session).values(), key=lambda s: s.name)
            if skill.name not in BUILTINS  # as in `kiln lsp`: the built-in is what runs
        ]
        previous = [] if again else self.sent.get(session.id, [])
        self.sent[session.id] = commands
        if commands == previous:
            return None
        return {"sessionUpdate": "available_commands_update", "availableCommands": commands}


def builtin(blocks: list[Any]) -> tuple[str, str] | None:
    """``(NAME, input)`` when the prompt is the built-in command ``/NAME input``."""
    match = _command(blocks)
    if match is None or match.group(1) not in BUILTINS:
        return None
    return match.group(1), (match.group(2) or "").strip()


def expand(session: Session, blocks: list[Any]) -> list[Any]:
    """``[/NAME rest, …]`` -> ``[skill NAME's block, rest, …]`` when NAME is a skill offered."""
    match = _command(blocks)
    skill = _skills(session).get(match.group(1)) if match else None
    if match is None or skill is None or match.group(1) in BUILTINS:
        return blocks
    rest = (match.group(2) or "").strip()
    text = [{"type": "text", "text": rest}] if rest else []
    return [skill_block(skill, session.root), *text, *blocks[1:]]


def _skills(session: Session) -> dict[str, Skill]:
    return session.skills.catalog().skills if session.skills is not None else {}


def _command(blocks: list[Any]) -> re.Match[str] | None:
    first = blocks[0] if blocks else None
    if not isinstance(first, dict) or first.get("type") != "text":
        return None
    return _COMMAND.match(str(first.get("text", "")))
