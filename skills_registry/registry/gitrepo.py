"""Each skill's latest release as a read-only git repository over git's HTTP protocols.

Claude Code installs a plugin from a URL-added marketplace only from an absolute source (a git
URL, GitHub, npm); relative paths work only for marketplaces cloned with git. So the live
``/.claude-plugin/marketplace.json`` points every plugin at ``/git/<ns>/<name>.git`` pinned to
a commit ``sha``, and this module serves that repository: one commit whose tree is the skill's
verified files, built in memory from the archive (blobs, trees and commit in git's object
format, zlib-compressed as loose objects) with fixed author and time, so the same archive
always gives the same commit. Claude Code clones with ``--depth 1``, which git's dumb protocol
cannot serve, so the smart protocol (v0, stateless over HTTP) is spoken too: the ref
advertisement and an ``upload-pack`` answer with a pack of every object (no deltas: a skill is
small). There is one parentless commit, so a shallow fetch has nothing to cut.
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

    def advertisement(self) -> bytes:
        """``GET info/refs?service=git-upload-pack``: the smart protocol's ref list."""
        caps = "shallow no-progress symref=HEAD:refs/heads/main agent=kiln-registry"
        return (
            _pkt(b"# service=git-upload-pack\n")
            + b"0000"
            + _pkt(f"{self.commit} HEAD\0{caps}\n".encode())
            + _pkt(f"{self.commit} refs/heads/main\n".encode())
            + b"0000"
        )

    def upload_pack(self, request: bytes) -> bytes:
        """``POST git-upload-pack``: shallow section if asked, NAK, and the pack once ``done``."""
        lines = _pkt_lines(request)
        wants = {(line.split()[1:] or [b""])[0] for line in lines if line.startswith(b"want ")}
        if not wants or wants != {self.commit.encode()}:
            raise ValueError("only the advertised commit can be fetched")
        deepen = any(line.startswith((b"deepen", b"shallow ")) for line in lines)
        out = b"0000" if deepen else b""  # no shallow lines: the one commit has no parents
        if any(line.strip() == b"done" for line in lines):
            out += _pkt(b"NAK\n") + self.pack()
        elif not deepen:
            out += _pkt(b"NAK\n")  # a negotiation round without shallow info: nothing in common
        return out

    def pack(self) -> bytes:
        kinds = {b"commit": 1, b"tree": 2, b"blob": 3}
        body = bytearray(b"PACK" + (2).to_bytes(4, "big") + len(self.objects).to_bytes(4, "big"))
        for raw in self.objects.values():
            header, _, data = raw.partition(b"\0")
            kind, size = kinds[header.split()[0]], len(data)
            byte = (kind << 4) | (size & 0x0F)
            size >>= 4
            while size:
                body.append(byte | 0x80)
                byte, size = size & 0x7F, size >> 7
            body.append(byte)
            body += zlib.compress(data)
        return bytes(body) + hashlib.sha1(body).digest()  # noqa: S324 - git's pack checksum


def _pkt(data: bytes) -> bytes:
    return f"{len(data) + 4:04x}".encode() + data


_HEX = frozenset(b"0123456789abcdefABCDEF")


def _pkt_lines(data: bytes) -> list[bytes]:
    """The pkt-lines of a request: four hex digits give each line's length, its own included;
    0000-0002 are markers without data. Anything else is a ValueError (a 400): ``int(..., 16)``
    also read ``-004``, which stepped back and looped forever on a server thread."""
    lines, i = [], 0
    while i + 4 <= len(data):
        head = data[i : i + 4]
        if not _HEX.issuperset(head):
            raise ValueError(f"malformed pkt-line length {head!r} at byte {i}")
        size = int(head, 16)
        if size < 4:  # flush, delimiter, response end
            i += 4
            continue
        if i + size > len(data):
            raise ValueError(f"pkt-line at byte {i} runs past the end of the request")
        lines.append(data[i + 4 : i + size].rstrip(b"\n"))
        i += size
    return lines


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
