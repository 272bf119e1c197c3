"""Which folder a session request works in: the ``cwd`` a client names, checked against the
server's workspace root, and the rule that a stored session is continued from its own folder."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from agent.errors import UsageError
from agent.session_store import kiln_home
from agent.workspace import check_root
from kiln_errors.shown import shown
from lsp_server.core.errors import NOT_ALLOWED, CoreError, InvalidParams
from lsp_server.core.local_names import is_file_uri, uri_problem, uri_to_path
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
        path = named = root  # still checked below: the root may hold the home folder
    elif not isinstance(cwd, str):
        raise InvalidParams("cwd must be a string path")
    elif (error := url_cwd(cwd, file_ok=True)) is not None:
        raise InvalidParams(error)
    else:
        if is_file_uri(cwd) and (why := uri_problem(cwd)) is not None:
            raise InvalidParams(f"cwd {shown(cwd)} names no folder on this machine: {why}")
        named = Path(uri_to_path(cwd) or cwd)
        if not named.is_absolute() and root is not None:
            named = root / named  # not the server process's working directory
        path = _resolved(named, cwd)
    if root is not None and path != root and root not in path.parents:
        raise CoreError(f"cwd {shown(str(path))} is outside the workspace {root}", code=NOT_ALLOWED)
    if (problem := folder_problem(named)) is not None:  # as named: a loop resolves to nothing
        raise InvalidParams(f"cwd {shown(str(named))} {problem}")
    try:
        check_root(path, kiln_home())
    except UsageError as exc:
        raise CoreError(str(exc), hint=exc.hint, code=NOT_ALLOWED) from None
    return path


def usable_folder(cwd: str) -> Path:
    """The existing folder an absolute ``cwd`` names, resolved; else InvalidParams in one line
    saying why (a missing path or a file, a NUL byte, a symbolic link loop, a name too long)."""
    path = _resolved(Path(cwd), cwd)
    if (problem := folder_problem(Path(cwd))) is not None:
        raise InvalidParams(f"cwd {shown(cwd)} {problem}")
    return path


def _resolved(path: Path, given: str) -> Path:
    """``path`` with its links resolved; a name no folder can have is refused in one line,
    not left to fail later as an internal error (``Path.resolve`` raises on a link loop)."""
    if (problem := _name_problem(given)) is not None:
        raise InvalidParams(f"cwd {shown(given)} {problem}")
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        why = folder_problem(path) or "cannot be resolved"
        raise InvalidParams(f"cwd {shown(given)} {why}") from None


def _name_problem(given: str) -> str | None:
    if "\x00" in given:
        return "holds a NUL byte: no folder has that name"
    try:
        given.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the file system takes no such name
        return "is not UTF-8 text: no folder has that name"
    return None


_WHY = {
    errno.ELOOP: "is a symbolic link loop",
    errno.ENAMETOOLONG: "is too long a name for a folder",
    errno.ENOENT: "is not a directory",
    errno.ENOTDIR: "is not a directory",
}


def folder_problem(path: Path) -> str | None:
    """Why ``path`` is no folder to work in (the end of a sentence), or None when it is one."""
    if (problem := _name_problem(str(path))) is not None:
        return problem
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return _WHY.get(exc.errno or 0, f"cannot be opened: {exc.strerror or exc}")
    return None if stat.S_ISDIR(mode) else "is not a directory"


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
