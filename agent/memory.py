"""Memory files, found the way the tools users already have find them.

- User level: ``KILN.md``, ``AGENTS.md``, ``CLAUDE.md`` in ``KILN_HOME``, ``~/.claude/CLAUDE.md``
  and Codex's ``~/.codex/AGENTS.md`` (``$CODEX_HOME``).
- From the repository root down to the workspace: ``KILN.md``, ``CLAUDE.md`` and
  ``CLAUDE.local.md`` at every level (as Claude Code does), ``AGENTS.md`` from the nearest level
  only (nearest wins, as Codex does). Without a repository the workspace is the only level.
- Below the workspace: the same names in a subdirectory, loaded the first time the agent touches
  something under it; in a folder git ignores (``node_modules``, ``.venv``) as data, a package's.

Each file becomes a tagged ``<memory>`` block appended at the tail, farthest first, so the frozen
prefix never changes. ``@path`` lines import other files (relative to the importing file, or
``~``), bounded and kept to allowed folders by ``agent.memory_read``: a repository's memory file
cannot pull ``~/.ssh``, ``~/.codex/auth.json`` or ``/proc/self/environ`` into the model's context.
A refused or missing import is a visible note, not a crash.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agent.errors import EXIT_USAGE, PermissionDenied, ToolError
from agent.injection import external
from agent.memory_read import MAX_BYTES, Scope, expand, in_git_folder, opening
from agent.workspace import atomic_write, read_regular
from agent.write_policy import HOST_RUN_REFUSAL, runs_on_host
from kiln_errors.home import holds_home
from kiln_errors.ownership import foreign

MEMORY_NAMES = ("KILN.md", "AGENTS.md", "CLAUDE.md")  # KILN_HOME and `kiln memory` targets
LEVEL_NAMES = ("KILN.md", "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md")
NEAREST_ONLY = "AGENTS.md"
DEPENDENCY = "dependency"  # the level of a memory file in a folder git ignores: a package's
USER_DIRS = (".claude", ".codex", ".agents")  # under the user's home: allowed import roots
# Subdirectory memory a session loads in all. Each file is cut at 40,000 bytes, but a checkout
# may put four of them in each of a hundred nested folders: one read of a file at the bottom
# put 4 MB into the context, sent again with every later request.
MAX_SUBDIRECTORY_BYTES = 200_000


class NoteTooLong(ToolError):
    """A note that would take its file past what a session reads (a tool error for
    ``remember``, a usage error for `kiln memory add`)."""

    exit_code = EXIT_USAGE


_write_lock = threading.Lock()
NEW_FILE = b"# Memory\n\n"  # what a memory file Kiln creates starts with


def repository_root(start: Path) -> Path:
    """The nearest folder at or above ``start`` holding ``.git`` (a folder or a worktree's
    file); ``start`` itself when there is none, or when that folder is ``/``, the home folder or
    one above it (dotfiles kept in ``~/.git``): a checkout without a ``.git`` of its own there
    would otherwise have the whole home folder as its repository, its memory importing
    ``~/.ssh/id_rsa`` and ``remember`` writing through a ``KILN.md -> ../../.bashrc``. Nor is a
    folder above ``start`` that git would refuse as another user's (``safe.directory``): a
    ``.git`` someone else made in ``/tmp`` made their memory files the project's."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            taken = folder == start or not (holds_home(folder) or foreign(folder))
            return folder if taken else start
    return start


def _block(
    level: str,
    path: Path,
    scope: Scope,
    note: str = "",
    *,
    users_own: bool = False,
    imports: list[Path] | None = None,
) -> str:
    text = expand(path, scope, users_own=users_own, imports=imports)
    if len(text.encode()) > MAX_BYTES:
        text = text.encode()[:MAX_BYTES].decode("utf-8", "ignore")
        note += (
            f"\n[memory note: {path.name} truncated to {MAX_BYTES} bytes; keep memory files short]"
        )
    if level == DEPENDENCY:  # not the repository's words: data, as read_file shows that file
        text = external(f"file:{path}", text.strip())
    return f"{opening(level, path)}\n{text.strip()}{note}\n</memory>"


class Memory:
    def __init__(
        self,
        root: Path,
        home: Path,
        user_home: Path | None = None,
        denied: Callable[[str], bool] | None = None,
    ) -> None:
        self.root = root
        self.home = home
        self.user_home = user_home if user_home is not None else Path.home()
        self.repo = repository_root(root)
        repository = (self.repo, root.resolve())
        codex = os.environ.get("CODEX_HOME", "").strip()
        self.codex_home = Path(codex).expanduser() if codex else self.user_home / ".codex"
        named = tuple(
            Path(os.path.abspath(p))
            for p in (home, *(self.user_home / d for d in USER_DIRS), self.codex_home)
        )
        users = tuple(p.resolve() for p in named)
        # The user's files import from any of these; a repository's only Markdown from the user's.
        # ``denied``: the user's read deny rules, which memory honours like every reading tool.
        self.user_scope = Scope(repository + users, linked=named, denied=denied)
        self.project_scope = Scope(repository, markdown=users, denied=denied)
        self.loaded_dirs: set[Path] = set()
        # Folders git runs files of besides ``.git`` (the configured hooks folder), which the
        # session's sandbox finds: a memory file linked into one is never written.
        self.host_run: Sequence[Path] = ()
        self.subdirectory_bytes = MAX_SUBDIRECTORY_BYTES  # left for this session
        # path -> [level, scope ("user"/"project"), note, stat, digest, {import: stat}] of each
        # file sent, so a file edited later in the session, or a file it imports, is sent again
        # (``agent.memory_watch``); entries stored before imports were watched have five items
        self.sent: dict[str, list[Any]] = {}

    def block(self, level: str, path: Path, scope: str, note: str = "") -> str:
        """A memory block, recorded as sent (with the files it imports, which
        ``agent.memory_watch`` watches with it)."""
        own = scope == "user"
        scoped = self.user_scope if own else self.project_scope
        imports: list[Path] = []
        text = _block(level, path, scoped, note, users_own=own, imports=imports)
        watched = {str(p): file_stat(p) for p in imports}
        self.sent[str(path)] = [level, scope, note, file_stat(path), _digest(text), watched]
        return text

    def _watch(self, level: str, path: Path, scope: str) -> None:
        """A memory file that does not exist yet: sent at the tail if it appears."""
        self.sent.setdefault(str(path), [level, scope, "", [], ""])

    def saved(self) -> dict[str, Any]:
        """What a resumed session needs so that memory already in its transcript is not sent
        again (the folders loaded, the subdirectory budget left)."""
        return {
            "memory_dirs": sorted(str(d) for d in self.loaded_dirs),
            "memory_bytes_left": self.subdirectory_bytes,
            "memory_sent": self.sent,
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.loaded_dirs.add(self.root)  # its memory came with the session's first message
        self.loaded_dirs.update(Path(d) for d in state.get("memory_dirs") or [])
        left = state.get("memory_bytes_left")
        if isinstance(left, int):
            self.subdirectory_bytes = left
        sent = state.get("memory_sent")
        if isinstance(sent, dict):
            self.sent = {
                str(k): list(v) for k, v in sent.items() if isinstance(v, list) and len(v) in (5, 6)
            }

    def levels(self) -> list[Path]:
        """Folders from the repository root down to the workspace root."""
        root = self.root.resolve()
        if self.repo == root or not root.is_relative_to(self.repo):
            return [root]
        parts = root.relative_to(self.repo).parts
        return [self.repo.joinpath(*parts[:i]) for i in range(len(parts) + 1)]

    def initial_blocks(self) -> list[str]:
        blocks = [
            self.block("user", self.home / n, "user")
            for n in MEMORY_NAMES
            if (self.home / n).is_file()
        ]
        # Claude Code's and Codex's global instructions, as those tools load them.
        for own in (self.user_home / ".claude" / "CLAUDE.md", self.codex_home / "AGENTS.md"):
            if own.is_file():
                blocks.append(self.block("user", own, "user"))
        for own in [
            *(self.home / n for n in MEMORY_NAMES),
            self.user_home / ".claude" / "CLAUDE.md",
        ]:
            self._watch("user", own, "user")
        levels = self.levels()
        with_agents = [d for d in levels if (d / NEAREST_ONLY).is_file()]
        nearest = with_agents[-1] if with_agents else None
        for folder in levels:
            level = "project" if folder in (self.repo, levels[-1]) else "directory"
            for name in LEVEL_NAMES:
                path = folder / name
                if not path.is_file() or (name == NEAREST_ONLY and folder != nearest):
                    continue
                note = ""
                if name == NEAREST_ONLY and len(with_agents) > 1:
                    farther = ", ".join(str(d / name) for d in with_agents[:-1])
                    note = f"\n[memory note: nearest {name}; it takes precedence over {farther}]"
                blocks.append(self.block(level, path, "project", note))
            self.loaded_dirs.add(folder)
        for name in LEVEL_NAMES:  # the workspace's own, which `kiln memory add` creates
            if name != NEAREST_ONLY or nearest is None:
                self._watch("project", levels[-1] / name, "project")
        self.loaded_dirs.add(self.root)
        return blocks

    def blocks_for(self, path: Path) -> list[str]:
        """Memory of subdirectories between the root and ``path`` not loaded yet."""
        directory = path if path.is_dir() else path.parent
        try:
            rel = directory.resolve().relative_to(self.root)
        except ValueError:
            return []
        blocks: list[str] = []
        current = self.root
        for part in rel.parts:
            current = current / part
            if current in self.loaded_dirs:
                continue
            self.loaded_dirs.add(current)
            for name in LEVEL_NAMES:
                if not (current / name).is_file() or self.subdirectory_bytes < 0:
                    continue
                from indexer.ignores import path_ignored  # pathspec: only when one is found

                own = not path_ignored(self.root, [*current.relative_to(self.root).parts, name])
                block = self.block("subdirectory" if own else DEPENDENCY, current / name, "project")
                self.subdirectory_bytes -= len(block.encode())
                if self.subdirectory_bytes >= 0:
                    blocks.append(block)
                else:
                    blocks.append(
                        f"{opening('subdirectory', current / name)}\n"
                        f"[memory note: not loaded, nor any further subdirectory memory file "
                        f"this session: they passed {MAX_SUBDIRECTORY_BYTES:,} bytes]\n</memory>"
                    )
        return blocks

    def project_file(self) -> Path:
        for name in MEMORY_NAMES:
            if (self.root / name).is_file():
                return self.root / name
        return self.root / "KILN.md"

    def check_target(self, target: Path) -> None:
        """A repository's memory file is written only where it resolves inside the repository.
        The write replaces a link, but reads the old text through it first: a shipped
        ``KILN.md -> ~/.ssh/id_rsa`` would have the key copied into the workspace's ``KILN.md``,
        which every later session sends to the model provider (and `--ci` could commit)."""
        root = self.root.resolve()
        if not target.absolute().is_relative_to(root):
            return  # the user's own file (KILN_HOME): theirs to link where they like
        resolved = target.resolve()
        if not (resolved.is_relative_to(self.repo) or resolved.is_relative_to(root)):
            raise PermissionDenied(
                f"{target.name} resolves outside the repository ({resolved}): "
                "Kiln writes no memory through it",
                hint=f"remove the link {target} or make it a regular file",
            )
        # A link to a file git or an editor runs by itself (`KILN.md -> .git/hooks/post-commit`,
        # `.exrc`): the note would land in it, its mode kept, and run at the user's next commit.
        if in_git_folder(resolved) or runs_on_host(target, root, self.host_run):
            raise PermissionDenied(
                HOST_RUN_REFUSAL.format(path=f"{target.name} (-> {resolved})"),
                hint=f"remove the link {target} or make it a regular file",
            )

    def user_file(self) -> Path:
        for name in MEMORY_NAMES:
            if (self.home / name).is_file():
                return self.home / name
        return self.home / "KILN.md"

    def append(self, text: str, target: Path | None = None) -> Path:
        """Append one bullet atomically, keeping the user's formatting; safe across threads and
        processes (two sessions remembering at once both land)."""
        target = target or self.project_file()
        self.check_target(target)
        line = " ".join(text.split())
        with _locked(self.home, target):
            data = _appended(_current(target), f"- {line}")
            if len(data) > MAX_BYTES:  # past what a session reads: the note would never arrive
                raise NoteTooLong(
                    f"{target.name} would be {len(data):,} bytes with this note; sessions read "
                    f"only its first {MAX_BYTES:,} bytes, so it was not added",
                    suggestion="shorten the note, or the file with `kiln memory edit`",
                )
            self._write(target, data)
        return target

    def _write(self, target: Path, data: bytes) -> None:
        """Replace the file's text atomically, through a link the file is (a memory file kept in
        a dotfiles repository, a KILN.md linked to a file of the repository that
        ``check_target`` vetted), so the link stays; in the workspace, from its root with no
        link on the way, even one made since the check."""
        dest = target.resolve() if target.is_symlink() else target
        inside = dest.absolute().is_relative_to(self.root.resolve())
        atomic_write(dest, data, root=self.root.resolve() if inside else None)

    def read_for_edit(self, target: Path) -> tuple[bytes | None, bytes]:
        """The file's bytes (None: no file yet) and the text an editor starts from."""
        self.check_target(target)
        old = _current(target)
        return old, NEW_FILE if old is None else old

    def save_edit(self, target: Path, shown: bytes, edited: bytes) -> bool:
        """Write the edited text unless the file changed meanwhile other than by lines added at
        its end (``remember`` or ``kiln memory add`` while the editor was open: those lines are
        kept after the edit). False, with nothing written, when it changed otherwise."""
        self.check_target(target)
        with _locked(self.home, target):
            now = _current(target)
            if now is not None and now != shown:
                if not now.startswith(shown):
                    return False
                added = now[len(shown) :]
                sep = b"" if not edited or edited.endswith(b"\n") else _newline(now)
                edited = edited + sep + added
            self._write(target, edited)
        return True


def file_stat(path: Path) -> list[int]:
    """What tells a changed file cheaply: [mtime ns, size, inode] (empty when it is gone)."""
    try:
        st = path.stat()
    except OSError:
        return []
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _current(target: Path) -> bytes | None:
    """The memory file's bytes before an append (None: no file yet); a regular file only (a
    FIFO would block)."""
    try:
        return read_regular(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PermissionDenied(
            f"cannot add to {target}: {exc.strerror or exc}",
            hint="memory files are regular text files; replace it with one",
        ) from None


def _appended(old: bytes | None, line: str) -> bytes:
    """``old`` with ``line`` added in the file's own encoding and line ends. The old bytes are
    kept as they are: decoding a Latin-1 file as UTF-8 and writing it back turned every accented
    letter into U+FFFD; a CRLF file got LF lines."""
    if old is None:
        return NEW_FILE + f"{line}\n".encode()
    encoding = "utf-16" if old.startswith((b"\xff\xfe", b"\xfe\xff")) else ""
    if encoding:
        try:
            text = old.decode(encoding)
        except UnicodeDecodeError:
            encoding = ""  # not really UTF-16: append bytes as below
        else:
            nl = "\r\n" if "\r\n" in text else "\n"
            sep = "" if not text or text.endswith("\n") else nl
            body = f"{sep}{line}{nl}".encode("utf-16-be" if old[:2] == b"\xfe\xff" else "utf-16-le")
            return old + body
    end = _newline(old)
    return old + (b"" if not old or old.endswith(b"\n") else end) + line.encode() + end


def _newline(data: bytes) -> bytes:
    return b"\r\n" if b"\r\n" in data else b"\n"


@contextlib.contextmanager
def _locked(home: Path, target: Path) -> Iterator[None]:
    """A per-file lock kept under KILN_HOME so the project tree gets no lock files."""
    locks = home / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(str(target.resolve()).encode()).hexdigest()[:16]
    with _write_lock, open(locks / f"{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def memory_blocks(root: Path, home: Path) -> list[str]:
    """What a new session in ``root`` starts with (for `kiln memory show`)."""
    return Memory(root, home).initial_blocks()
