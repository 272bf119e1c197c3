"""Which synced document a URI or a path names. pygls keys documents by the unescaped URI and
editors escape paths differently, so a lookup by path compares paths, not URI strings; a URI
that names no local file (another scheme, another host, a relative path) names none."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsp_server.core import uri_to_path


def document_path(uri: str) -> Path | None:
    """The local file a document URI names; None for another scheme, a host other than this
    one (``file://server/share/x.py``) and a relative path (``file:x.py``, which would name a
    file relative to wherever the server happens to run); also for a name no file system
    holds (``lsp_server.core.local_names``)."""
    path = uri_to_path(uri)  # None for another host
    return path if path is not None and path.is_absolute() else None


def open_document(workspace: Any, uri: str) -> Any | None:
    """The synced text document the editor opened as ``uri``; None for any other (pygls keys
    documents by the unescaped URI: ``my%20file.py`` is held as ``my file.py``)."""
    docs = getattr(workspace, "text_documents", {}) or {}
    return docs.get(unquote(uri))


def find_document(workspace: Any, path: Path) -> Any | None:
    """The synced text document for ``path`` (URIs differ in escaping, so compare paths)."""
    doc = open_document(workspace, path.as_uri())
    if doc is not None:
        return doc
    docs = getattr(workspace, "text_documents", {}) or {}
    target = path.resolve()
    for doc in list(docs.values()):  # may run on the watcher thread
        doc_path = document_path(doc.uri)  # the URI as the editor sent it, escapes and all
        if doc_path is not None and doc_path.resolve() == target:
            return doc
    return None
