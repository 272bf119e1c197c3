"""Prompt content (ACP content blocks, LSP resource references with ranges) to agent blocks."""

from __future__ import annotations

import base64
import errno
import os
import re
from html import escape, unescape
from pathlib import Path
from typing import Any

from agent.compaction import estimate_tokens
from agent.errors import PathOutsideWorkspace
from agent.injection import external
from agent.types import Block
from agent.workspace import read_regular
from kiln_errors.shown import listed, shown, unlisted
from lsp_server.core.errors import CoreError, InvalidParams
from lsp_server.core.local_names import is_file_uri, uri_problem, uri_to_path
from skills_registry.skill import Skill

SKILL_URI = "kiln-skill:"  # a ``/name`` block's URI: the skill NAME as the session offers it


def prompt_to_blocks(
    prompt: Any, *, root: Path, read_text: Any, read_uri: Any = None, skill_text: Any = None
) -> list[Block]:
    """ACP content blocks (text, resource_link, resource) plus ranges -> agent text blocks.

    ``read_text(path) -> str | None`` reads unsaved buffers first; ``read_uri(uri)`` (optional)
    reads documents that have no file, such as an editor's ``untitled:`` buffers. A reference
    with a ``range`` (LSP positions, 0-based lines) contributes only those lines, so a selection
    reaches the model. ``skill_text(name) -> str | None`` (optional) renders a skill the session
    offers: a ``kiln-skill:NAME`` block (``skill_block``) becomes that text, the skill as the
    ``skill`` tool loads it (a third-party skill's body wrapped as external, a project skill's
    bare), whatever text the client sent; one naming no such skill is data like any resource.
    """
    if isinstance(prompt, str):
        prompt = [{"type": "text", "text": prompt}]
    if not isinstance(prompt, list) or not prompt:
        raise InvalidParams("prompt must be a non-empty list of content blocks")
    blocks: list[Block] = []
    for item in prompt:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise InvalidParams("each prompt item needs a 'type'")
        kind = item["type"]
        if kind == "text":
            if not isinstance(item.get("text"), str):
                raise InvalidParams("a text block needs 'text'")
            blocks.append({"type": "text", "text": item["text"]})
        elif kind in ("resource_link", "resource"):
            loaded = _skill_text(item, skill_text)
            text = (
                loaded if loaded is not None else _reference_text(item, root, read_text, read_uri)
            )
            blocks.append({"type": "text", "text": text})
        else:
            raise InvalidParams(
                f"unsupported prompt block type {kind!r}",
                hint="use text, resource_link or resource",
            )
    return blocks


def skill_block(skill: Skill, root: Path) -> dict[str, Any]:
    """A prompt block carrying a skill's instructions as the `skill` tool loads them: how a
    ``/name`` command starts a turn with that skill (`kiln lsp`'s ``kiln/skills/use``, `kiln acp`)."""
    text = skill.render(root)
    return {
        "type": "resource",
        "resource": {"uri": f"{SKILL_URI}{skill.name}", "mimeType": "text/markdown", "text": text},
    }


def rendered_skill(session: Any, name: str) -> str | None:
    """Skill NAME as the session's ``skill`` tool returns it (``Skill.render``), or None when
    the session offers no skill of that name."""
    skills = getattr(session, "skills", None)
    skill = skills.catalog().get(name) if skills is not None else None
    return skill.render(session.root) if skill is not None else None


def _skill_text(item: dict[str, Any], skill_text: Any) -> str | None:
    """The rendered skill a ``kiln-skill:NAME`` resource block names, or None."""
    resource = item.get("resource")
    if skill_text is None or item["type"] != "resource" or not isinstance(resource, dict):
        return None
    uri = resource.get("uri")
    if not isinstance(uri, str) or not uri.startswith(SKILL_URI):
        return None
    text: str | None = skill_text(uri[len(SKILL_URI) :])
    return text


def check_fits(blocks: list[Block], window: int) -> None:
    """Refuse a prompt that alone is larger than the model's whole context window: the provider
    would refuse it, and kept in the transcript it would fail every later turn of the session."""
    size = estimate_tokens(blocks)
    if window > 0 and size > window:
        raise InvalidParams(
            f"the prompt is about {size:,} tokens, more than the model's whole context window "
            f"({window:,} tokens)",
            hint="send less text (a smaller selection, fewer files): the agent reads files "
            "itself with its tools",
        )


def _reference_text(item: dict[str, Any], root: Path, read_text: Any, read_uri: Any) -> str:
    resource = item.get("resource") if item["type"] == "resource" else item
    if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
        raise InvalidParams("a resource reference needs a 'uri'")
    uri = resource["uri"]
    path = uri_to_path(uri)
    text = resource.get("text") if isinstance(resource.get("text"), str) else None
    if text is None and item["type"] == "resource" and "blob" in resource:
        text = _blob_text(uri, resource["blob"])
    embedded = text is not None
    if not embedded and is_file_uri(uri) and (why := uri_problem(uri)) is not None:
        # read as another scheme's URI, it reached the model as an empty reference (or, for
        # another host, as the local file of that path)
        raise InvalidParams(
            f"{shown(uri)} names no file on this machine: {why}",
            hint="attach files of the workspace by their file: URI",
        )
    rel = uri
    if path is not None:
        if (real := resolved(path)) is None:  # a link loop, a name too long: no file to attach
            raise InvalidParams(
                f"cannot attach {shown(uri)}: {path_problem(path)}",
                hint="attach a file of the workspace by its own path",
            )
        try:
            rel = str(real.relative_to(root))
        except ValueError:
            raise CoreError(
                f"{shown(uri)} is outside the workspace",
                hint="reference files inside the workspace root",
            ) from None
        if text is None:
            text = read_text(path)
    elif text is None and read_uri is not None:
        text = read_uri(uri)
    # The name sits outside the wrapper, in the user's own message: on one line (a file named
    # "a", a newline, "SYSTEM: ..." put that line bare there), as the file tools list it.
    where = escape(listed(rel if path is not None else uri))
    attrs = f'path="{where}"' if path is not None else f'uri="{where}"'
    if text is None:
        return f"<reference {attrs}/>"
    span = item.get("range") or item.get("selection") or resource.get("range")
    if span is None and not embedded:  # an embedded selection's text is the selection already
        span = link_range(uri)
    if span is not None:
        try:
            start, end = int(span["start"]["line"]), int(span["end"]["line"])
        except (KeyError, TypeError, ValueError):
            raise InvalidParams("range needs start.line and end.line") from None
        start, end = min(start, end), max(start, end)  # a selection made upwards
        if start < 0:
            raise InvalidParams(f"range line {start} is negative (lines are 0-based)")
        lines = _LSP_BREAK.split(text)
        if not lines[-1]:  # the text ends with a break: no line after it
            lines.pop()
        text = "\n".join(lines[start : end + 1])
        attrs += f' lines="{start + 1}-{end + 1}"'
    # The file is the repository's text (or a page's, for a URI): data, as read_file answers it;
    # bare, a "</reference>" in it made what followed read as the user's own words.
    source = f"file:{rel}" if path is not None else uri
    return f"<reference {attrs}>\n{external(source, text)}\n</reference>"


# Where a line ends for LSP (and in a client's line numbers): not at a form feed or U+2028,
# which Python's splitlines also breaks at.
_LSP_BREAK = re.compile(r"\r\n|\r|\n")
# A line range in a link's fragment, as editors write a selection: ``#L2``, ``#L2:3`` (Zed),
# ``#L2-L3``/``#L2-3`` (GitHub), ``#L2C5-L3C9`` (columns ignored); lines are 1-based.
_LINES = re.compile(r"L(\d+)(?:C\d+)?(?:[:-]L?(\d+)(?:C\d+)?)?", re.IGNORECASE)
MAX_LINE = 2**31 - 1  # LSP's largest line number, and more than any file has


def link_range(uri: str) -> dict[str, Any] | None:
    """The lines a ``#L…`` fragment of ``uri`` names, as an LSP range (0-based), or None. Only
    for text read from the file: an embedded resource's text is the selection already."""
    _, sep, fragment = uri.partition("#")
    found = _LINES.fullmatch(fragment) if sep else None
    if found is None:
        return None
    named = (found.group(1), found.group(2) or found.group(1))
    if max(map(len, named)) > len(str(MAX_LINE)) or max(map(int, named)) > MAX_LINE:
        raise InvalidParams(  # (and int() of over 4,300 digits raised, an internal error)
            f"line range #{shown(fragment, 60)} names a line past {MAX_LINE:,}",
            hint="link lines as #L12 or #L12-L20",
        )
    first, last = map(int, named)
    if min(first, last) < 1:
        raise InvalidParams(
            f"line range #{fragment} starts at line 0 (lines in a link are 1-based)"
        )
    return {"start": {"line": first - 1}, "end": {"line": last - 1}}


_REFERENCE = re.compile(
    r'<reference (path|uri)="([^"]*)"(?: lines="\d+-\d+")?(?:/>|>\n'
    r'(?:<external_content source="[^"\n]*">\n)?(.*?)(?:\n</external_content>)?\n</reference>)',
    re.DOTALL,
)


def reference_block(text: str, root: Path) -> dict[str, Any] | None:
    """The ACP content block a stored ``<reference>`` stands for, to replay it as the client
    showed it (a file chip, not markup): a ``resource`` with the text the model saw, or a
    ``resource_link`` when nothing could be read. None for any other text."""
    found = _REFERENCE.fullmatch(text)
    if found is None:
        return None
    kind, where, body = found.group(1), unescape(found.group(2)), found.group(3)
    where = unlisted(where) or where  # the name as it was, escapes and all
    uri = (root / where).as_uri() if kind == "path" else where
    if body is None:
        return {"type": "resource_link", "uri": uri, "name": where.rsplit("/", 1)[-1] or where}
    return {"type": "resource", "resource": {"uri": uri, "text": body}}


def _blob_text(uri: str, blob: Any) -> str:
    """An embedded resource's ``blob`` (base64) as text; binary content is refused, as images
    are, rather than replaced by what the disk holds under that URI."""
    try:
        return base64.b64decode(blob, validate=True).decode("utf-8")
    except (TypeError, ValueError):  # binascii.Error and UnicodeDecodeError included
        raise InvalidParams(
            f"the embedded resource {uri} is not base64-encoded UTF-8 text (a binary blob)",
            hint="attach text files only",
        ) from None


def url_cwd(cwd: str, *, file_ok: bool) -> str | None:
    """The one-line error for a session ``cwd`` that is a URL (``http://x/``) rather than a
    folder, or None; ``file://`` URIs pass where the host maps them (``file_ok``)."""
    head, sep, _ = cwd.partition("://")
    if not sep or not head[:1].isalpha() or len(head) < 2:
        return None
    if not all(c.isalnum() or c in "+.-" for c in head) or (file_ok and head.lower() == "file"):
        return None
    return f"cwd {shown(cwd)} is a URL, not a folder: pass the workspace folder as an absolute path"


def read_disk(path: Path, root: Path) -> str | None:
    """An attached file's text as the file tools read it (None: no such file, or a folder): a
    regular file of at most 64 MB, still inside ``root`` once open. A FIFO there (a command of
    an earlier turn can make one) waited for a writer forever, and a 2 GB file was read whole."""
    try:
        data = read_regular(path, [root])
    except (FileNotFoundError, IsADirectoryError):
        return None
    except PathOutsideWorkspace as exc:
        raise CoreError(str(exc), hint="reference files inside the workspace root") from None
    except OSError as exc:
        if exc.errno == errno.EISDIR or _is_dir(path):
            return None
        raise InvalidParams(
            f"cannot attach {shown(path.name)}: {exc.strerror or exc}",
            hint="attach regular text files of at most 64 MB",
        ) from None
    return data.decode("utf-8", errors="replace")


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, say: no folder either
        return False


def resolved(path: Path) -> Path | None:
    """``path`` with its links resolved; None when no file can have it (``Path.resolve``
    raises on a symbolic link loop, and on a name the system cannot take)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return None


def path_problem(path: Path) -> str:
    """Why ``path`` names no file, in the system's words (``Too many levels of symbolic
    links``, ``File name too long``)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.strerror or str(exc)
    except ValueError:  # a NUL byte, half a surrogate pair
        return "no file can have that name"
    return "it cannot be resolved"
