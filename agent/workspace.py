"""The workspace boundary: every path a tool touches resolves inside the root, symlinks included.

Reads prefer the host's open-buffer text (unsaved edits) over the disk, so the agent sees what
the editor sees. Writes are atomic (temp file + rename) so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from agent.errors import PathOutsideWorkspace, ToolError
from agent.write_policy import HOST_RUN_REFUSAL, runs_on_host


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
        candidate = raw if raw.is_absolute() else self.root / raw
        try:
            resolved = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as exc:  # symlink loops
            raise ToolError(f"cannot resolve {path}: {exc}") from exc
        if for_read and any(r == resolved or r in resolved.parents for r in self.read_roots):
            return resolved
        if resolved != self.root and self.root not in resolved.parents:
            raise PathOutsideWorkspace(
                f"path {path!s} resolves outside the workspace ({self.root})"
            )
        return resolved

    def resolve_write(self, path: str | Path) -> Path:
        """``resolve``, refusing what git or an editor acts on by itself (``runs_on_host``)."""
        resolved = self.resolve(path)
        if runs_on_host(path, self.root, self.host_run):
            raise ToolError(HOST_RUN_REFUSAL.format(path=path))
        return resolved

    def relative(self, path: Path | str) -> str:
        p = Path(path)
        try:
            return p.resolve().relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(p)

    def contains(self, path: str | Path) -> bool:
        try:
            self.resolve(path)
        except (PathOutsideWorkspace, ToolError):
            return False
        return True


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write text (UTF-8) or bytes so readers see the old or the new file, never a torn one;
    keeps the mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
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


MAX_READ_BYTES = 64 * 1024 * 1024


def read_regular(path: Path) -> bytes:
    """A regular file's bytes. Opening a FIFO the agent made (``mkfifo``) would block the host
    forever, a device never ends, and a huge file would be read whole into memory: each is an
    OSError instead."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        if st.st_size > MAX_READ_BYTES:
            raise OSError(0, f"larger than {MAX_READ_BYTES // 2**20} MB")
        return fh.read()


def check_root(root: Path, kiln_home: Path, *, resumed: str = "") -> None:
    """Refuse a workspace that holds what the sandbox and the file tools must keep from the
    agent: ``/`` or a folder holding the home folder (shell start-up files, ``~/.config``, every
    credential would be workspace files, writable by commands and free to edit), a folder holding
    ``$KILN_HOME`` or inside it (Kiln's own settings, approvals and credentials). The
    ``resumed`` session's workspace must still be a folder (moved or deleted since, the tools
    would act on nothing)."""
    from agent.errors import UsageError
    from agent.sandbox.policy import home_dirs

    if resumed and not Path(root).is_dir():
        raise UsageError(
            f"the workspace of session {resumed}, {root}, is not a folder any more",
            hint="restore it there, or start a new session",
        )
    root = Path(root).resolve()
    state = Path(kiln_home).resolve()
    homes = [h.resolve() for h in home_dirs()]
    if root == Path(root.anchor) or any(root == h or root in h.parents for h in homes):
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
