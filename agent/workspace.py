"""The workspace boundary: every path a tool touches resolves inside the root, symlinks included.

Reads prefer the host's open-buffer text (unsaved edits) over the disk, so the agent sees what
the editor sees. Writes are atomic (temp file + rename) so a crash never leaves half a file.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from agent.errors import PathOutsideWorkspace, ToolError
from agent.write_policy import HOST_RUN_REFUSAL, runs_on_host
from kiln_errors.home import holds_home
from kiln_errors.shown import cut, listed, shown, unlisted


class Workspace:
    def __init__(self, root: Path | str, read_roots: list[Path] | None = None) -> None:
        self.root = Path(root).resolve()
        # Extra folders readable but not writable (the session folder with saved tool outputs).
        self.read_roots = [p.resolve() for p in read_roots or []]
        # Folders git acts on besides ``.git`` (the configured hooks folder, a separate git
        # folder), found by ``agent.sandbox.attach``: the file tools never write there.
        self.host_run: list[Path] = []

    def resolve(self, path: str | Path, *, for_read: bool = False) -> Path:
        """Absolute, symlink-resolved path inside the root, or PathOutsideWorkspace."""
        raw = Path(os.path.expanduser(str(path))) if str(path).startswith("~") else Path(path)
        candidate = on_disk(raw if raw.is_absolute() else self.root / raw)
        try:
            resolved = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as exc:  # symlink loops
            # The exception names the path again, absolute and whole: give its reason only.
            if isinstance(exc, OSError):
                raise ToolError(f"cannot resolve {shown(str(path))}: {exc.strerror}") from None
            raise ToolError(
                f"cannot resolve {shown(str(path))}: Symlink loop",
                suggestion="the path goes through a symbolic link loop: name the file another way",
            ) from None
        if for_read and any(r == resolved or r in resolved.parents for r in self.read_roots):
            return resolved
        if resolved != self.root and self.root not in resolved.parents:
            raise PathOutsideWorkspace(
                f"path {shown(str(path))} resolves outside the workspace ({shown(str(self.root))})"
            )
        return resolved

    def resolve_write(self, path: str | Path) -> Path:
        """``resolve``, refusing what git or an editor acts on by itself (``runs_on_host``)."""
        resolved = self.resolve(path)
        if runs_on_host(path, self.root, self.host_run):
            raise ToolError(HOST_RUN_REFUSAL.format(path=shown(str(path))))
        return resolved

    def relative(self, path: Path | str) -> str:
        p = Path(path)
        try:
            return p.resolve().relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(p)

    def named(self, path: str) -> str:
        """``path`` as the model gave it, spelled relative to the root for an answer: an
        absolute ``/home/me/repo/src/a.py`` is ``src/a.py``, so the context holds no host path
        and reads the same on every machine. Its last part stays as asked (a shipped link is
        named by its own name, never its target's, which may hold an instruction); folders are
        resolved only when the spelling alone does not place it under the root. Listed as the
        file tools list names (``\\n`` escaped) and cut as ``shown`` cuts (a 3,000-character path is
        its start, "…" and its end); one outside the root is shown as given."""
        raw = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
        full = Path(os.path.normpath(raw if raw.is_absolute() else self.root / raw))
        for candidate in (full, full.parent.resolve() / full.name if full.name else full):
            try:
                return cut(listed(candidate.relative_to(self.root).as_posix() or "."))
            except (ValueError, OSError, RuntimeError):
                continue
        return shown(path)

    def contains(self, path: str | Path) -> bool:
        try:
            self.resolve(path)
        except (PathOutsideWorkspace, ToolError):
            return False
        return True


def on_disk(path: Path) -> Path:
    """``path``, or the file the tools listed under that spelling (``listed``: a name holding a
    newline or a byte that is not UTF-8 is shown escaped) when only that one is there."""
    if "\\" not in str(path) or os.path.lexists(path):
        return path
    name = unlisted(str(path))
    return Path(name) if name is not None and os.path.lexists(name) else path


def atomic_write(path: Path, text: str | bytes, *, root: Path | None = None) -> None:
    """Write text (UTF-8) or bytes so readers see the old or the new file, never a torn one;
    keeps the mode. With ``root`` (a workspace), ``path`` is reached from it without following
    any link (``write_inside``)."""
    if root is not None:
        write_inside(root, path, text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale_temps(path)
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".kiln-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


STALE_TEMP_SECONDS = 3600  # older than any write still running


def _sweep_stale_temps(path: Path) -> None:
    """Remove this file's temps (``.NAME.xxxxxxxx.kiln-tmp``) that writes killed before their
    rename left, once an hour old: the user's memory file under ``$KILN_HOME`` kept every one."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.kiln-tmp", re.S)
    try:
        entries = [e for e in os.scandir(path.parent) if pattern.fullmatch(e.name)]
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and time.time() - info.st_mtime > STALE_TEMP_SECONDS:
                os.unlink(entry.path)


class PathChanged(ToolError):
    """A folder on the way to an approved edit became a link (or went away) since the check."""


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def _open_parent(root: Path, path: Path, *, create: bool) -> tuple[int, str] | None:
    """A descriptor of the folder of ``path`` reached from ``root`` one name at a time, never
    through a link, and the file's name in it; a missing folder is made (``create``) or None."""
    parts = Path(path).relative_to(root).parts
    if not parts or any(p in ("..", ".") for p in parts):
        raise PathChanged(f"{path} is not a file inside the workspace {root}")
    fd = os.open(root, _DIR)
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                os.mkdir(part, dir_fd=fd)
                child = os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
    except OSError as exc:
        os.close(fd)
        raise PathChanged(
            f"{path}: {exc.strerror or exc} on the way (a folder became a link since the edit "
            "was checked?); nothing written",
            suggestion="look at the folder (list_files) and redo the edit",
        ) from None
    return fd, parts[-1]


def check_unmoved(root: Path, path: Path) -> None:
    """Raise ``PathChanged`` when ``path`` (resolved when the edit was checked) no longer
    resolves to itself inside ``root``: for a write another program (an editor) makes."""
    try:
        now = Path(path).resolve()
    except (OSError, RuntimeError):
        now = None
    root = Path(root).resolve()
    if now != Path(path) or (now != root and root not in now.parents):
        raise PathChanged(
            f"{path} now resolves to {now} (a folder became a link since the edit was "
            "checked?); nothing written",
            suggestion="look at the folder (list_files) and redo the edit",
        )


def write_inside(root: Path, path: Path, text: str | bytes) -> None:
    """``atomic_write`` for a workspace file: every folder from ``root`` down is opened without
    following a link, and the new file is renamed into the folder held open. A command that
    swaps a folder for a link to ``~`` between the permission check (or the user's yes) and the
    write cannot move the write out of the workspace."""
    opened = _open_parent(Path(root).resolve(), Path(path), create=True)
    assert opened is not None
    folder, name = opened
    tmp = f".{name}.{os.urandom(4).hex()}.kiln-tmp"
    try:
        try:
            old = os.stat(name, dir_fd=folder, follow_symlinks=False)
            mode = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else None
        except FileNotFoundError:
            mode = None
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o666, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(text.encode("utf-8") if isinstance(text, str) else text)
                if mode is not None:
                    os.fchmod(fh.fileno(), mode)
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder)
            except OSError:
                pass
            raise
    finally:
        os.close(folder)


def read_inside(root: Path, path: Path) -> str | None:
    """The text of a workspace file reached as ``write_inside`` reaches it (None: no such
    file), a regular file only: what an approved edit compares with before writing."""
    opened = _open_parent(Path(root).resolve(), Path(path), create=False)
    if opened is None:
        return None
    folder, name = opened
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(name, flags, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PathChanged(f"{path}: {exc.strerror or exc}; nothing written") from None
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_READ_BYTES:
            raise PathChanged(f"{path} is not a regular file any more; nothing written")
        return fh.read().decode("utf-8")


MAX_READ_BYTES = 64 * 1024 * 1024


def disk_text(path: Path, root: Path | None) -> str | None:
    """The text on disk of a file an editor's edit is about to replace, line ends as they are
    (None: no such file, or not UTF-8), compared with the text the edit was computed on. Reached
    as ``read_inside`` reaches it when the workspace ``root`` is known: a command running
    between the check and the user's yes may have put a FIFO there, and opening it for reading
    waited for a writer forever, on the editor host's event loop (``PathChanged`` instead)."""
    try:
        if root is not None:
            return read_inside(root, path)
        return read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def read_regular(path: Path, inside: Sequence[Path] = ()) -> bytes:
    """A regular file's bytes. Opening a FIFO the agent made (``mkfifo``) would block the host
    forever, a device never ends, and a huge file would be read whole into memory: each is an
    OSError instead. With ``inside``, the file opened must lie in one of those folders: ``path``
    was resolved and checked before, and a process running meanwhile may have turned a folder
    on the way into a link to ``~/.ssh`` since (PathOutsideWorkspace)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        opened = opened_path(fd) if inside else None
        if opened is not None and not any(r == opened or r in opened.parents for r in inside):
            raise PathOutsideWorkspace(
                f"{path} led outside the workspace when opened (a folder on the way became a "
                "link since it was checked?); nothing read"
            )
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        if st.st_size > MAX_READ_BYTES:
            raise OSError(0, f"larger than {MAX_READ_BYTES // 2**20} MB")
        return fh.read()


def opened_path(fd: int) -> Path | None:
    """Where an open descriptor's file is (None where the system cannot say)."""
    try:
        if sys.platform == "darwin":
            import fcntl

            raw = fcntl.fcntl(fd, 50, b"\0" * 1024)  # F_GETPATH
            return Path(raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape"))
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None


def check_root(root: Path, kiln_home: Path, *, resumed: str = "") -> None:
    """Refuse a workspace that holds what the sandbox and the file tools must keep from the
    agent: ``/`` or a folder holding the home folder (shell start-up files, ``~/.config``, every
    credential would be workspace files, writable by commands and free to edit), a folder holding
    ``$KILN_HOME`` or inside it (Kiln's own settings, approvals and credentials). The
    ``resumed`` session's workspace must still be a folder (moved or deleted since, the tools
    would act on nothing)."""
    from agent.errors import UsageError

    if resumed and not Path(root).is_dir():
        raise UsageError(
            f"the workspace of session {resumed}, {root}, is not a folder any more",
            hint="restore it there, or start a new session",
        )
    root = Path(root).resolve()
    try:
        str(root).encode("utf-8")
    except UnicodeEncodeError:  # SQLite, JSON and the providers take UTF-8 text only
        from indexer.files import printable

        raise UsageError(
            f"workspace {printable(str(root))} has a name that is not UTF-8 text",
            hint="rename the folder; Kiln keeps the workspace's path with its sessions",
        ) from None
    state = Path(kiln_home).resolve()
    if holds_home(root):
        raise UsageError(
            f"workspace {root} holds your home folder: commands and edits there could change "
            "your shell start-up files and settings",
            hint="open a project folder: cd into it, or pass --root DIR (an ACP client: its cwd)",
        )
    if root == state or state in root.parents or root in state.parents:
        raise UsageError(
            f"workspace {root} overlaps Kiln's state folder {state} (KILN_HOME)",
            hint="open a project folder outside KILN_HOME",
        )
