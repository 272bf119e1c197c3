"""Credentials a CI checkout leaves in the repository's own git config.

``actions/checkout`` (``persist-credentials``, on by default) writes the job's token into
``.git/config`` as ``http.https://github.com/.extraheader = AUTHORIZATION: basic <base64 of
x-access-token:TOKEN>``; other setups put ``https://user:token@host/…`` in a remote's URL. The
file is readable by every command (git needs it) and by the file tools, and a token the agent sees
can leave in its answer, the summary comment, the patch or the branch — posted while the job (and
the token) is still live. So commands see a copy of the config with those values blanked (bound
over ``.git/config`` in the sandbox, ``agent/sandbox/bwrap.py``), and in CI the values are also
secrets that every tool output, transcript, patch and summary redacts.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path

from indexer.reading import read_regular

EXTRAHEADER = re.compile(r"^(\s*extraheader\s*=\s*)(.*?)\s*$", re.I | re.M)
URL_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)([^/@\s\"]+)@", re.I)
SCHEME_VALUE = re.compile(r"^(?:authorization:\s*)?(?:basic|bearer|token)\s+(\S+)$", re.I)
HIDDEN = "hidden-by-kiln"
MAX_CONFIG = 1 << 20


def config_file(root: Path) -> Path | None:
    """The config git uses for the workspace: ``.git/config``, or the common dir's config a
    ``.git`` file leads to (a linked worktree, a submodule checkout)."""
    dotgit = Path(root) / ".git"
    try:
        if dotgit.is_dir():
            return dotgit / "config"
        if not dotgit.is_file():
            return None
        line = head(dotgit)
        if not line.startswith("gitdir:"):
            return None
        gitdir = (Path(root) / line[len("gitdir:") :].strip()).resolve()
        common = gitdir / "commondir"
        if common.is_file():
            gitdir = (gitdir / head(common)).resolve()
        return gitdir / "config"
    except OSError:
        return None


SECTION = re.compile(r"^\s*\[\s*(include|includeif)\b", re.I)
ANY_SECTION = re.compile(r"^\s*\[")
INCLUDE_PATH = re.compile(r"^\s*path\s*=\s*(.*?)\s*$", re.I)
MAX_FILES = 16


def config_files(root: Path) -> list[Path]:
    """The workspace's git config and the files it includes (``include.path``,
    ``includeIf.*.path``: ``actions/checkout`` from v6 keeps the token in an included file under
    ``$RUNNER_TEMP``), a few levels deep."""
    first = config_file(root)
    found: list[Path] = []
    todo = [first] if first is not None else []
    while todo and len(found) < MAX_FILES:
        path = todo.pop(0)
        if path in found:
            continue
        found.append(path)
        section = False
        for line in _text(path).splitlines():
            if ANY_SECTION.match(line):
                section = bool(SECTION.match(line))
            elif section and (m := INCLUDE_PATH.match(line)):
                name = os.path.expanduser(m.group(1).strip('"'))
                todo.append((path.parent / name).resolve())
    return found


def head(path: Path, limit: int = 4096) -> str:
    """The first line of a one-line pointer file (``.git``, ``commondir``), stripped, read from
    its first ``limit`` bytes only: a hostile checkout's ``.git`` may be gigabytes, or turn into
    a FIFO after the check, and neither may cost more than the read of a line. A NUL ends the
    line (no path holds one). Raises OSError when it is no regular file."""
    text = read_regular(path, limit)[:limit].decode("utf-8", errors="replace")
    return text.split("\x00", 1)[0].split("\n", 1)[0].strip()


def _text(path: Path | None) -> str:
    """A config file's text; "" when it is missing, no regular file, or over ``MAX_CONFIG``."""
    if path is None:
        return ""
    try:
        data = read_regular(path, MAX_CONFIG)
    except OSError:
        return ""
    return "" if len(data) > MAX_CONFIG else data.decode("utf-8", errors="replace")


def secrets(root: Path) -> list[tuple[str, str]]:
    """(name, value) of every credential in the workspace's git config: each extra header, the
    token inside it (as written and base64-decoded), and each password in a URL."""
    found: dict[str, str] = {}
    text = "\n".join(_text(path) for path in config_files(root))
    for match in EXTRAHEADER.finditer(text):
        value = match.group(2).strip().strip('"')
        found[value] = "GIT_EXTRAHEADER"
        token = SCHEME_VALUE.match(value)
        if token:
            found[token.group(1)] = "GIT_EXTRAHEADER"
            try:
                decoded = base64.b64decode(token.group(1), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                decoded = ""
            if decoded:
                found[decoded] = "GIT_EXTRAHEADER"
                found[decoded.partition(":")[2]] = "GIT_EXTRAHEADER"
    for match in URL_USERINFO.finditer(text):
        userinfo = match.group(2)
        found[userinfo] = "GIT_URL_CREDENTIALS"
        found[userinfo.partition(":")[2]] = "GIT_URL_CREDENTIALS"
    return [(name, value) for value, name in found.items() if len(value) >= 8]


def sanitized(root: Path) -> dict[Path, str]:
    """Each of ``config_files`` that holds a credential, with its credentials blanked."""
    out: dict[Path, str] = {}
    for path in config_files(root):
        text = _text(path)
        clean = EXTRAHEADER.sub(lambda m: m.group(1) + HIDDEN, text)
        clean = URL_USERINFO.sub(lambda m: m.group(1), clean)
        if clean != text:
            out[path] = clean
    return out
