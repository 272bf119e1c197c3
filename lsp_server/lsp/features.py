"""The standard LSP features of `kiln lsp`: lifecycle, document sync, settings, hover, index.

Module-level handlers the pygls way (``ls: KilnServer`` first, lsprotocol params second),
listed in ``FEATURES`` for ``server.create_server``. Documents and the code index follow what
the user sees; anything slow runs in a worker thread so requests are answered while turns
stream.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.core import INVALID_PARAMS, CoreConfig, CoreError, SessionManager, heap
from lsp_server.core.config import typed_options
from lsp_server.core.local_names import name_problem
from lsp_server.lsp.document_lookup import document_path, find_document, open_document
from lsp_server.lsp.documents import IndexSync
from lsp_server.lsp.fresh_index import FreshIndex
from lsp_server.lsp.host import plain_json
from lsp_server.lsp.progress import IndexProgress
from lsp_server.lsp.rpc import INT32
from lsp_server.lsp.transport import watch_parent

if TYPE_CHECKING:
    from lsp_server.lsp.server import KilnServer

log = logging.getLogger("kiln.lsp")

FLAGS = {"confirmEdits": "boolean", "index": "boolean", "hover": "boolean"}  # kiln lsp's own


def initialize(ls: KilnServer, params: types.InitializeParams) -> None:
    options = plain_json(params.initialization_options)
    if options is None or options == []:  # none given (Neovim sends an empty table as [])
        options = {}
    ls.options = options if isinstance(options, dict) else {}
    try:  # "yolo" or 5 is no set of options: refused as an ill-typed option is, not ignored
        ls.config = CoreConfig.from_options(typed_options(options, "initializationOptions", FLAGS))
    except CoreError as exc:  # start anyway; kiln/hello reports what was ignored
        ls.config_error = f"{exc} ({exc.hint})" if exc.hint else str(exc)
        log.warning("ignoring initializationOptions: %s", ls.config_error)
    ls.frontend.confirm_edits = ls.options.get("confirmEdits") is True  # "false" is no yes
    try:
        ls.root = _workspace_root(params)
    except JsonRpcException:
        ls.protocol.initialize_received = False  # the client may name a folder and retry
        raise
    ls.index_sync = IndexSync(ls.root, enabled=ls.options.get("index", True) is not False)
    ls.manager = SessionManager(ls.frontend, root=ls.root, config=ls.config)
    pid = params.process_id
    if isinstance(pid, int) and 0 < pid < INT32:
        ls.spawn(watch_parent(ls.protocol, pid))
    elif pid is not None:  # LSP's integers are 32-bit: no process has that id to watch
        log.warning("processId %.40s is not a process id; the editor is not watched", pid)


def initialized(ls: KilnServer, params: types.InitializedParams) -> None:
    """Run as it is read (a plain function): the client hears the logs of every message
    behind it."""
    if ls.started:  # a repeated `initialized` must not index and watch twice
        log.info("ignoring a repeated initialized notification")
        return
    ls.started = True
    ls.attach_client_log()
    ls.spawn(_start(ls))


async def _start(ls: KilnServer) -> None:
    """Settings, watching and the first scan, side by side: neither of the last two reads a
    setting, and a client may take its time to answer ``workspace/configuration``."""
    ls.spawn(_pull_configuration(ls))
    ls.spawn(_register_file_watching(ls))
    ls.spawn(_index_workspace(ls))


async def shutdown(ls: KilnServer, params: Any) -> None:
    await ls.close_down()


# The buffer handlers are plain functions: pygls runs them as the notification is read, so the
# index hears of a change, a close and a save in the order the editor sent them.


def did_open(ls: KilnServer, params: types.DidOpenTextDocumentParams) -> None:
    _buffer_changed(ls, params.text_document.uri)


def did_change(ls: KilnServer, params: types.DidChangeTextDocumentParams) -> None:
    _buffer_changed(ls, params.text_document.uri)


def did_save(ls: KilnServer, params: types.DidSaveTextDocumentParams) -> None:
    """An open document's buffer owns its index rows (it is what the editor shows); a save
    of a file the server does not hold re-reads the disk."""
    path = document_path(params.text_document.uri)
    if path is None or ls.index_sync is None:
        return
    doc = open_document(ls.workspace, params.text_document.uri)
    ls.index_sync.forget_buffer(path)
    ls.index_sync.queue_update(path, None if doc is None else doc.source)


def did_close(ls: KilnServer, params: types.DidCloseTextDocumentParams) -> None:
    path = document_path(params.text_document.uri)
    if path is not None and ls.index_sync is not None:
        ls.index_sync.forget_buffer(path)  # unsaved text typed just before is dropped
        ls.index_sync.queue_update(path)  # back to what the disk holds


def watched_files_changed(ls: KilnServer, params: types.DidChangeWatchedFilesParams) -> None:
    if ls.index_sync is None:
        return
    for change in params.changes:
        path = document_path(change.uri)
        if path is not None and find_document(ls.workspace, path) is None:
            ls.index_sync.queue_update(path)


async def configuration_changed(ls: KilnServer, params: types.DidChangeConfigurationParams) -> None:
    settings = plain_json(params.settings)
    if isinstance(settings, dict) and isinstance(settings.get("kiln"), dict):
        _apply_settings(ls, settings["kiln"])
    else:
        await _pull_configuration(ls)


async def hover(ls: KilnServer, params: types.HoverParams) -> types.Hover | None:
    """Where the word under the cursor is defined, from the index (cheap, read-only)."""
    sync = ls.index_sync
    if sync is None or sync.index is None or ls.options.get("hover", True) is False:
        return None
    # Only a document the editor opened: pygls would read any other URI from the disk (a
    # missing file was an internal error, and no file outside the editor's buffers is read).
    doc = open_document(ls.workspace, params.text_document.uri)
    if doc is None:
        return None
    word = doc.word_at_position(params.position)
    if not word:
        return None
    # What was typed a moment ago counts: the buffers go into the index first. The search
    # then runs on a thread of its own, not on the index thread right after the write: on a
    # busy machine the longer burst of one thread waits longer for a CPU than two short ones
    # (bench/lsp_edit.py at load 9-10: edit -> searchable p50 / p95 9.2 / 30 ms against
    # 18.5 / 47 ms with the same CPU time).
    hits = await sync.flush_then(sync.index.search, word, 3)
    if not hits:
        return None
    kind = _hover_format(ls)
    show = _code if kind == types.MarkupKind.Markdown else _plain
    lines = [
        "- {} {}".format(
            show(getattr(h, "name", "")),
            show(f"{getattr(h, 'path', '')}:{getattr(h, 'start_line', '')}"),
        )
        for h in hits
    ]
    return types.Hover(contents=types.MarkupContent(kind=kind, value="\n".join(lines)))


def _hover_format(ls: KilnServer) -> types.MarkupKind:
    """The first format of the client's ``hover.contentFormat`` (its order of preference);
    Markdown when it names none (a client that shows no Markdown would show the markup)."""
    text_document = getattr(ls.client_capabilities, "text_document", None)
    formats = getattr(getattr(text_document, "hover", None), "content_format", None) or []
    known = [f for f in formats if f in (types.MarkupKind.Markdown, types.MarkupKind.PlainText)]
    return types.MarkupKind(known[0]) if known else types.MarkupKind.Markdown


def _plain(text: str) -> str:
    return " ".join(str(text).splitlines())


def _code(text: str) -> str:
    """``text`` as a Markdown code span: names and paths come from the repository, and in
    plain Markdown a file named ``[docs](https://x).py`` would be a link in the hover."""
    text = " ".join(str(text).splitlines())
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


FEATURES: list[tuple[str, Callable[..., Any]]] = [
    (types.INITIALIZE, initialize),
    (types.INITIALIZED, initialized),
    (types.SHUTDOWN, shutdown),
    (types.TEXT_DOCUMENT_DID_OPEN, did_open),
    (types.TEXT_DOCUMENT_DID_CHANGE, did_change),
    (types.TEXT_DOCUMENT_DID_SAVE, did_save),
    (types.TEXT_DOCUMENT_DID_CLOSE, did_close),
    (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, watched_files_changed),
    (types.WORKSPACE_DID_CHANGE_CONFIGURATION, configuration_changed),
    (types.TEXT_DOCUMENT_HOVER, hover),
]


def end_index_progress(ls: KilnServer, message: str) -> None:
    """End the indexing work-done progress if it is still open; nothing is reported after."""
    progress, ls.index_progress = ls.index_progress, None
    if progress is not None:
        progress.end(message)


def _workspace_root(params: types.InitializeParams) -> Path:
    named = [*(f.uri for f in params.workspace_folders or []), params.root_uri]
    for uri in named:
        path = document_path(uri) if uri else None  # None: no local file (§1)
        if path is not None and _is_folder(path):
            return path.resolve()
    if params.root_path and _is_folder(Path(params.root_path)):
        return Path(params.root_path).resolve()
    if any(named) or params.root_path:
        log.warning("no folder the client named is a local folder; the workspace is the cwd")
    try:
        return Path.cwd().resolve()
    except OSError as exc:  # the folder the server was started in is gone
        raise JsonRpcException(
            code=INVALID_PARAMS,
            message=f"no workspace folder: none was named that exists here, and the server's "
            f"working directory is gone ({exc.strerror})",
        ) from None


def _is_folder(path: Path) -> bool:
    """A folder on this machine; a name no file system holds (a NUL, a component past 255
    bytes: ENAMETOOLONG out of ``is_dir``) is none."""
    if name_problem(path) is not None:
        return False
    try:
        return path.is_dir()
    except OSError:
        return False


def _buffer_changed(ls: KilnServer, uri: str) -> None:
    path = document_path(uri)
    doc = open_document(ls.workspace, uri)  # None for a change to a document never opened
    if path is None or doc is None or ls.index_sync is None:
        return
    ls.index_sync.buffer_changed(path, doc.source)


def _apply_settings(ls: KilnServer, settings: dict[str, Any]) -> None:
    try:
        ls.config = CoreConfig.from_options(typed_options(settings, "kiln", FLAGS), ls.config)
    except Exception as exc:  # noqa: BLE001 - a bad setting is reported, the old one kept
        log.warning("ignoring kiln settings: %s", exc)
        hint = getattr(exc, "hint", "")  # said where the user changed it, not only in a log
        ls.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Warning,
                message=f"Kiln settings not applied: {exc}" + (f" ({hint})" if hint else ""),
            )
        )
        return
    if ls.manager is not None:
        ls.manager.config = ls.config
    if "confirmEdits" in settings:
        ls.frontend.confirm_edits = bool(settings["confirmEdits"])


async def _pull_configuration(ls: KilnServer) -> None:
    workspace = getattr(ls.client_capabilities, "workspace", None)
    if not getattr(workspace, "configuration", False):
        return
    try:
        result = await asyncio.wait_for(
            ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="kiln")])
            ),
            timeout=5,
        )
    except Exception as exc:  # noqa: BLE001 - configuration is optional
        log.info("workspace/configuration failed: %s", str(exc) or "no answer within 5 s")
        return
    settings = plain_json(result[0]) if result else None
    if isinstance(settings, dict):
        _apply_settings(ls, settings)


async def _register_file_watching(ls: KilnServer) -> None:
    """Ask the editor for ``workspace/didChangeWatchedFiles`` (it sees changes made by tools
    and git that the server's own watcher may miss, e.g. on network drives)."""
    workspace = getattr(ls.client_capabilities, "workspace", None)
    watched = getattr(workspace, "did_change_watched_files", None)
    if not getattr(watched, "dynamic_registration", False):
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
    )
    registration = types.Registration(
        id=f"kiln-watch-{uuid.uuid4().hex[:8]}",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=options,
    )
    try:
        await asyncio.wait_for(
            ls.client_register_capability_async(
                types.RegistrationParams(registrations=[registration])
            ),
            timeout=5,
        )
    except Exception as exc:  # noqa: BLE001 - the server's own watcher still runs
        log.info("client file watching not registered: %s", str(exc) or "no answer within 5 s")


async def _index_workspace(ls: KilnServer) -> None:
    """Open the index, scan once with work-done progress, then watch the disk. The progress
    covers the opening too: opening can wait for another process's lock as long as a scan."""
    sync = ls.index_sync
    if sync is None:
        return
    if not sync.enabled:
        await sync.open()  # unavailable, and says why
        return
    window = getattr(ls.client_capabilities, "window", None)
    progress = None
    if getattr(window, "work_done_progress", False):  # asked for aside: the work starts now
        progress = ls.index_progress = IndexProgress(ls, f"kiln-index-{uuid.uuid4().hex[:8]}")
        ls.spawn(progress.ask())
    if await sync.open() is None:
        end_index_progress(ls, f"index unavailable: {sync.error}")
        return
    if ls.manager is not None:
        ls.manager.index = FreshIndex(sync, lambda path, text: _holds(ls, path, text))
    loop = asyncio.get_running_loop()

    last = [-1]

    def report(done: int, total: int, rel: str) -> None:
        percent = int(100 * done / total) if total else 100
        if progress is None or (percent == last[0] and done != total):
            return
        last[0] = percent
        loop.call_soon_threadsafe(progress.report, done, total, percent)

    stats = await sync.initial_update(report)
    if progress is not None:  # before the next await: a client may read "ready" meanwhile
        progress.scan_over()
    status = await sync.status()
    files, blocks = stats.get("files_seen", 0), status.get("blocks", 0)
    end_index_progress(ls, f"{files} files, {blocks} blocks")
    log.info("indexed %s files (%s blocks)", files, blocks)
    for path, text in _open_buffers(ls):  # opened during the scan, which read the disk:
        sync.queue_update(path, text)  # the buffers win again
    sync.start_watching(
        skip=lambda path: find_document(ls.workspace, path) is not None,
        buffers=lambda: _open_buffers(ls),
    )
    heap.after_first_scan()


def _open_buffers(ls: KilnServer) -> list[tuple[Path, str]]:
    """The editor's open documents that name a file, with their text."""
    docs = list(ls.workspace.text_documents.values())
    return [(p, doc.source) for doc in docs if (p := document_path(doc.uri)) is not None]


def _holds(ls: KilnServer, path: Path, text: str) -> bool:
    """Whether the editor's buffer for ``path``, else the disk, holds ``text``."""
    doc = find_document(ls.workspace, path)
    if doc is not None:
        return bool(doc.source == text)
    from agent.workspace import read_regular

    try:  # a FIFO a command swapped in meanwhile must not hold the server (``read_regular``)
        return read_regular(path) == text.encode("utf-8")
    except OSError:
        return False
