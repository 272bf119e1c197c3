"""The front-end-neutral session core shared by `kiln lsp` and `kiln acp`.

Both front-ends speak ACP's session model (new / load / list / prompt / cancel, streamed
``session/update`` payloads, permission requests with options), so the agent ``Event`` to ACP
update mapping, prompt conversion, permission timeouts, edit modes and the table of live sessions
live here once. A front-end supplies a small ``Frontend`` (where updates go, how the user is
asked, unsaved buffer text, how an accepted edit reaches the files) and stays a thin transport::

    manager = SessionManager(frontend, root=workspace, config=CoreConfig.from_options(opts))
    session = await manager.new_session(cwd=None, options={"mode": "ask"})
    reason = await manager.prompt(session.id, [{"type": "text", "text": "hi"}])
    manager.cancel(session.id)   # the prompt call above then returns "cancelled"
"""

from lsp_server.core.config import EDIT_MODES, CoreConfig, Frontend
from lsp_server.core.errors import (
    INVALID_PARAMS,
    NOT_ALLOWED,
    NOT_AVAILABLE,
    SESSION_NOT_FOUND,
    STALE_DOCUMENT,
    TURN_IN_PROGRESS,
    CoreError,
    InvalidParams,
    NotAvailable,
    TurnInProgress,
    UnknownSession,
)
from lsp_server.core.host import CoreHost
from lsp_server.core.local_names import uri_to_path
from lsp_server.core.manager import SessionManager
from lsp_server.core.prompts import prompt_to_blocks
from lsp_server.core.updates import (
    ACP_TOOL_KINDS,
    ACP_UPDATE_KINDS,
    COALESCE_SECONDS,
    DECISIONS,
    PERMISSION_OPTIONS,
    acp_stop_reason,
    decision_from_answer,
    diff_content,
    event_to_update,
    history_updates,
    is_text_chunk,
    permission_tool_call,
)

__all__ = [
    "ACP_TOOL_KINDS", "ACP_UPDATE_KINDS", "COALESCE_SECONDS", "DECISIONS", "EDIT_MODES", "INVALID_PARAMS",
    "NOT_ALLOWED", "NOT_AVAILABLE", "PERMISSION_OPTIONS", "SESSION_NOT_FOUND", "STALE_DOCUMENT",
    "TURN_IN_PROGRESS", "CoreConfig", "CoreError", "CoreHost", "Frontend", "InvalidParams",
    "NotAvailable", "SessionManager", "TurnInProgress", "UnknownSession", "acp_stop_reason",
    "decision_from_answer", "diff_content", "event_to_update", "history_updates", "is_text_chunk",
    "permission_tool_call",
    "prompt_to_blocks", "uri_to_path",
]  # fmt: skip
