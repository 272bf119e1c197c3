"""Which folder a session request works in: the ``cwd`` a client names, checked against the
server's workspace root, and the rule that a stored session is continued from its own folder."""

from __future__ import annotations

from pathlib import Path

from agent.errors import UsageError
from agent.session_store import kiln_home
from agent.workspace import check_root
from lsp_server.core.errors import NOT_ALLOWED, CoreError, InvalidParams
from lsp_server.core.local_names import name_problem, shown, uri_problem, uri_to_path
from lsp_server.core.prompts import url_cwd


def session_folder(root: Path | None, cwd: str | None) -> Path:
    """The folder a request's ``cwd`` names (a path or a file: URL; relative to ``root``; none
    at all: ``root``), refused unless it is an existing folder inside ``root`` that Kiln may
    use as a workspace (``agent.workspace.check_root``: not the home folder, say)."""
    if cwd is None:
        if root is None:
            raise InvalidParams(
                "cwd is required", hint="pass the workspace folder as an absolute path"
            )
        path = root  # still checked below: the root may hold the home folder
    elif not isinstance(cwd, str):
        raise InvalidParams("cwd must be a string path")
    elif (error := url_cwd(cwd, file_ok=True)) is not None:
        raise InvalidParams(error)
    else:
        if cwd.startswith("file:") and (why := uri_problem(cwd)) is not None:
            raise InvalidParams(f"cwd {shown(cwd)} names no folder on this machine: {why}")
        path = Path(uri_to_path(cwd) or cwd)
        if not path.is_absolute() and root is not None:
            path = root / path  # not the server process's working directory
        if (why := name_problem(path)) is not None:  # the file system would raise on it
            raise InvalidParams(f"cwd {shown(str(path))} names no folder: {why}")
        try:
            path = path.resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a loop of symbolic links
            why = exc.strerror if isinstance(exc, OSError) else "its symbolic links run in a loop"
            raise InvalidParams(f"cwd {shown(str(path))} names no folder: {why}") from None
    if root is not None and path != root and root not in path.parents:
        raise CoreError(f"cwd {shown(str(path))} is outside the workspace {root}", code=NOT_ALLOWED)
    if not path.is_dir():
        raise InvalidParams(f"cwd {shown(str(path))} is not a directory")
    try:
        check_root(path, kiln_home())
    except UsageError as exc:
        raise CoreError(str(exc), hint=exc.hint, code=NOT_ALLOWED) from None
    return path


def same_workspace(session_id: str, root: Path, cwd: Path | None) -> None:
    """A session is continued from its own folder, one inside it or one that holds it."""
    if cwd is None:
        return
    cwd = cwd.resolve()
    if cwd == root or root in cwd.parents or cwd in root.parents:
        return
    raise CoreError(
        f"session {session_id} belongs to {root}, not {cwd}",
        hint=f"open {root} to continue it, or start a new session here",
        code=NOT_ALLOWED,
    )
