"""A small editor for tests: a real pygls client that starts `kiln lsp` as a subprocess.

It behaves like an editor where it matters: it holds buffers, applies ``workspace/applyEdit``
to them with the negotiated position encoding (and tells the server with ``didChange``), answers
permission requests by a policy the test sets, and records every update, log and progress
message. Nothing of the server is mocked.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.workspace.position_codec import PositionCodec
from pygls.workspace.text_document import TextDocument

from lsp_server.lsp.rpc import json_converter

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
REJECT = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}


def plain(value: Any) -> Any:
    from lsp_server.lsp.host import plain_json

    return plain_json(value)


class Editor(LanguageClient):
    def __init__(
        self, *, encoding: str = "utf-16", annotations: bool = False, apply_edit: bool = True
    ) -> None:
        super().__init__("kiln-test-editor", "1", converter_factory=json_converter)
        self.encoding = encoding
        self.annotations = annotations
        self.apply_edit = apply_edit
        self.updates: list[dict[str, Any]] = []
        self.update_event = asyncio.Event()
        self.permission_requests: list[dict[str, Any]] = []
        self.apply_requests: list[dict[str, Any]] = []
        self.logs: list[str] = []
        self.progress: list[dict[str, Any]] = []
        self.docs: dict[str, TextDocument] = {}
        self.closing = asyncio.Event()
        self.registrations: list[str] = []
        self.settings: dict[str, Any] | None = None  # answered to workspace/configuration
        self.stderr = bytearray()
        # Policies a test may replace: return an answer, or None to never answer.
        self.on_permission: Callable[[dict[str, Any]], Any] = lambda params: ALLOW
        self.on_apply: Callable[[dict[str, Any]], bool] = lambda params: True
        self._register()

    # -- what the server sends ---------------------------------------------------------------

    def _register(self) -> None:
        @self.feature("kiln/session/update")
        def on_update(ls: Editor, params: Any) -> None:
            ls.updates.append(plain(params))
            ls.update_event.set()

        @self.feature("kiln/session/requestPermission")
        async def on_permission(ls: Editor, params: Any) -> Any:
            request = plain(params)
            ls.permission_requests.append(request)
            answer = ls.on_permission(request)
            if answer is None:  # never answers (until the editor closes)
                await ls.closing.wait()
                return REJECT
            return answer

        @self.feature(types.WORKSPACE_APPLY_EDIT)
        def on_apply(ls: Editor, params: types.ApplyWorkspaceEditParams) -> Any:
            request = plain(params)
            ls.apply_requests.append(request)
            if not ls.on_apply(request):
                return types.ApplyWorkspaceEditResult(
                    applied=False, failure_reason="rejected by the user"
                )
            return ls._apply(request["edit"])

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(ls: Editor, params: types.LogMessageParams) -> None:
            ls.logs.append(params.message)

        @self.feature(types.WINDOW_SHOW_MESSAGE)
        def on_show(ls: Editor, params: types.ShowMessageParams) -> None:
            ls.logs.append("show: " + params.message)

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_progress_create(ls: Editor, params: Any) -> None:
            return None

        @self.feature(types.PROGRESS)
        def on_progress(ls: Editor, params: Any) -> None:
            ls.progress.append(plain(params))

        @self.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(ls: Editor, params: types.RegistrationParams) -> None:
            ls.registrations.extend(r.method for r in params.registrations)

        @self.feature(types.WORKSPACE_CONFIGURATION)
        def on_configuration(ls: Editor, params: Any) -> list[Any]:
            return [ls.settings]

    def _apply(self, edit: dict[str, Any]) -> types.ApplyWorkspaceEditResult:
        for change in edit.get("documentChanges") or []:
            if change.get("kind") == "create":
                path = Path(types_uri_path(change["uri"]))
                if not path.exists():
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text("", encoding="utf-8")
                continue
            uri, version = change["textDocument"]["uri"], change["textDocument"].get("version")
            doc = self.docs.get(uri)
            if doc is None:  # not open: edit the file on disk, as an editor does in the background
                path = Path(types_uri_path(uri))
                text = path.read_text(encoding="utf-8") if path.exists() else ""
                tmp = TextDocument(uri, text, position_codec=PositionCodec(self.encoding))
                for e in change["edits"]:
                    tmp.apply_change(_change(e))
                path.write_text(tmp.source, encoding="utf-8")
                continue
            if version is not None and version != doc.version:
                return types.ApplyWorkspaceEditResult(
                    applied=False, failure_reason="version mismatch"
                )
            changes = [_change(e) for e in change["edits"]]
            for c in changes:
                doc.apply_change(c)
            doc.version = (doc.version or 0) + 1
            self.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=uri, version=doc.version
                    ),
                    content_changes=changes,
                )
            )
        for uri, edits in (edit.get("changes") or {}).items():
            doc = self.docs[uri]
            for e in edits:
                doc.apply_change(_change(e))
        return types.ApplyWorkspaceEditResult(applied=True)

    # -- what a test does ------------------------------------------------------------------

    async def start(
        self,
        root: Path,
        env: dict[str, str],
        options: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> types.InitializeResult:
        self.settings = settings
        await self.start_io(sys.executable, "-m", "lsp_server", "lsp", env=env, cwd=str(root))
        assert self._server is not None and self._server.stderr is not None
        self._async_tasks.append(asyncio.create_task(self._drain(self._server.stderr)))
        workspace_edit = types.WorkspaceEditClientCapabilities(
            document_changes=True,
            resource_operations=[types.ResourceOperationKind.Create],
            change_annotation_support=(
                types.ChangeAnnotationsSupportOptions(groups_on_label=True)
                if self.annotations
                else None
            ),
        )
        result = await self.initialize_async(
            types.InitializeParams(
                process_id=os.getpid(),
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                # The server's wait for an answer; a test that lets a question time out sets
                # its own. Short, an answer from a loaded test process came too late: refused.
                initialization_options={"permissionTimeout": 60, **(options or {})},
                capabilities=types.ClientCapabilities(
                    general=types.GeneralClientCapabilities(position_encodings=[self.encoding]),
                    window=types.WindowClientCapabilities(work_done_progress=True),
                    workspace=types.WorkspaceClientCapabilities(
                        workspace_edit=workspace_edit,
                        apply_edit=self.apply_edit,
                        configuration=True,
                        did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                            dynamic_registration=True
                        ),
                    ),
                ),
            )
        )
        self.initialized(types.InitializedParams())
        return result

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.stderr.extend(chunk)

    async def request(self, method: str, params: Any = None, timeout: float = 60) -> Any:
        result = await asyncio.wait_for(self.protocol.send_request_async(method, params), timeout)
        return plain(result)

    def notify(self, method: str, params: Any = None) -> None:
        self.protocol.notify(method, params)

    def open(self, path: Path, text: str, language: str = "python") -> str:
        uri = path.as_uri()
        self.docs[uri] = TextDocument(uri, text, 1, position_codec=PositionCodec(self.encoding))
        self.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id=language, version=1, text=text
                )
            )
        )
        return uri

    def type_text(self, uri: str, new_text: str) -> None:
        """Replace the whole buffer (unsaved), like select-all + paste."""
        doc = self.docs[uri]
        lines = doc.source.split("\n")
        end = types.Position(
            line=len(lines) - 1, character=doc.position_codec.client_num_units(lines[-1])
        )
        change = types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=0), end=end), text=new_text
        )
        doc.apply_change(change)
        doc.version = (doc.version or 0) + 1
        self.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
                content_changes=[change],
            )
        )

    def updates_for(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            u["update"]
            for u in self.updates
            if u["sessionId"] == session_id
            and (kind is None or u["update"]["sessionUpdate"] == kind)
        ]

    async def wait_for_update(
        self, session_id: str, kind: str, timeout: float = 60
    ) -> dict[str, Any]:
        async def wait() -> dict[str, Any]:
            while True:
                found = self.updates_for(session_id, kind)
                if found:
                    return found[-1]
                self.update_event.clear()
                await self.update_event.wait()

        return await asyncio.wait_for(wait(), timeout)

    async def until_busy(self, *session_ids: str, timeout: float = 60) -> None:
        """Wait until each of ``session_ids`` has a turn running, as kiln/session/list says."""

        async def wait() -> None:
            while True:
                listed = await self.request("kiln/session/list", {})
                busy = {s["sessionId"] for s in listed["sessions"] if s["busy"]}
                if busy.issuperset(session_ids):
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(wait(), timeout)

    async def close(self) -> None:
        self.closing.set()
        await asyncio.sleep(0)
        if self._server is not None and self._server.returncode is None:
            try:
                await asyncio.wait_for(self.shutdown_async(None), 10)
                self.exit(None)
            except Exception:  # noqa: BLE001 - the server may already be gone
                pass
            try:
                await asyncio.wait_for(self._server.wait(), 10)
            except TimeoutError:
                self._server.kill()
        await self.stop()


def _change(edit: dict[str, Any]) -> types.TextDocumentContentChangePartial:
    r = edit["range"]
    return types.TextDocumentContentChangePartial(
        range=types.Range(
            start=types.Position(line=r["start"]["line"], character=r["start"]["character"]),
            end=types.Position(line=r["end"]["line"], character=r["end"]["character"]),
        ),
        text=edit["newText"],
    )


def types_uri_path(uri: str) -> str:
    from pygls.uris import to_fs_path

    path = to_fs_path(uri)
    assert path is not None
    return path
