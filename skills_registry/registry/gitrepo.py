"""Each skill's latest release as a read-only git repository over git's "dumb" HTTP protocol.

Claude Code installs a plugin from a URL-added marketplace only from an absolute source (a git
URL, GitHub, npm); relative paths work only for marketplaces cloned with git. So the live
``/.claude-plugin/marketplace.json`` points every plugin at ``/git/<ns>/<name>.git`` pinned to
a commit ``sha``, and this module serves that repository: one commit whose tree is the skill's
verified files, built in memory from the archive (blobs, trees and commit in git's object
format, zlib-compressed as loose objects) with fixed author and time, so the same archive
always gives the same commit. ``git clone`` falls back to the dumb protocol on its own.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from typing import Any

from skills_registry.archive import ArchiveContents

_PERSON = b"Kiln Registry <registry@kiln.invalid> 0 +0000"


@dataclass(frozen=True)
class GitRepo:
    commit: str
    objects: dict[str, bytes]  # sha1 hex -> uncompressed object (header + body)

    def info_refs(self) -> bytes:
        return f"{self.commit}\trefs/heads/main\n".encode()

    def loose(self, sha: str) -> bytes | None:
        raw = self.objects.get(sha)
        return zlib.compress(raw) if raw is not None else None


def build_repo(contents: ArchiveContents, message: str) -> GitRepo:
    objects: dict[str, bytes] = {}

    def put(kind: str, body: bytes) -> str:
        raw = f"{kind} {len(body)}".encode() + b"\0" + body
        sha = hashlib.sha1(raw).hexdigest()  # noqa: S324 - git's object ids are sha1
        objects[sha] = raw
        return sha

    root: dict[str, Any] = {}
    for path, data in contents.files.items():
        *folders, leaf = path.split("/")
        node = root
        for folder in folders:
            node = node.setdefault(folder, {})
        node[leaf] = (data, path in contents.executables)

    def tree(node: dict[str, Any]) -> str:
        entries = []
        for name, value in node.items():
            if isinstance(value, dict):
                entries.append((name.encode() + b"/", b"40000", name, tree(value)))
            else:
                data, executable = value
                mode = b"100755" if executable else b"100644"
                entries.append((name.encode(), mode, name, put("blob", data)))
        entries.sort(key=lambda e: e[0])  # git orders folders as if their name ended in '/'
        return put(
            "tree",
            b"".join(m + b" " + n.encode() + b"\0" + bytes.fromhex(s) for _, m, n, s in entries),
        )

    top = tree(root)
    commit = put(
        "commit",
        b"tree %s\nauthor %s\ncommitter %s\n\n%s\n"
        % (top.encode(), _PERSON, _PERSON, message.encode()),
    )
    return GitRepo(commit, objects)
