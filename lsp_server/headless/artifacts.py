"""The folder a headless run writes its outputs to (patch, summary, report, transcript).

``--artifacts`` may name a folder inside the workspace, and the checkout is not to be trusted:
a link it ships at ``out`` (or at a folder above it) would send the outputs, and the folders
made for them, wherever the repository's author chose; the agent's commands can put links there
too, and a link at ``summary.md`` to ``~/.bashrc`` would have Kiln overwrite that file with a
summary quoting the agent's answer. So the path is walked name by name: a link inside the
workspace is refused (before the run, a usage error; after it, the folder moved), a link
outside it (the runner's own, a temp folder's alias) is followed. The folder must still be the
real folder it was when the run started when the outputs are written, and each file is written
beside its name and renamed over it, which replaces a link instead of following it. (No command
of the run is alive by then: the sandbox ended each one.)

Nor may the folder lie in a git directory: ``--artifacts .git/hooks`` (or ``.git``) put the
outputs among git's own hooks and config, where git, not the run, decides what a name means. The
real folder is refused before the run when a folder on it is named ``.git`` (the checkout's, a
nested repository's, a submodule's under ``.git/modules``) or is the checkout's git directory or
common directory, wherever a ``.git`` file names them (a worktree, ``--separate-git-dir``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agent.errors import KilnError, UsageError

MAX_LINKS = 40  # as the kernel follows at most 40 links in one path


class ArtifactsMoved(KilnError):
    hint = "keep --artifacts outside the checkout (as the GitHub Action does)"


class LinkInWorkspace(Exception):
    """A name on the path that is a link inside the workspace."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


def real_folder(path: str, workspace: str) -> str:
    """``path`` (absolute) with each link on it followed, as the kernel would, except a link
    inside ``workspace`` (a real path): that raises ``LinkInWorkspace``. Names past the first
    one missing are taken as they are (the folders made there are real ones)."""
    parts = path.split("/")[::-1]
    current, hops = "/", 0
    while parts:
        name = parts.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        try:
            mode = os.lstat(candidate).st_mode
        except (FileNotFoundError, NotADirectoryError):
            mode = 0
        if stat.S_ISLNK(mode):
            if candidate == workspace or candidate.startswith(workspace.rstrip("/") + "/"):
                raise LinkInWorkspace(candidate)
            hops += 1
            if hops > MAX_LINKS:
                raise OSError(40, "Too many levels of symbolic links")
            target = os.readlink(candidate)
            parts.extend(target.split("/")[::-1])
            if target.startswith("/"):
                current = "/"
            continue
        current = candidate
    return current


def git_folder(real: str, git_dirs: tuple[Path, ...]) -> str | None:
    """The git directory ``real`` (a real path) lies in: a folder named ``.git`` on it, or one
    of ``git_dirs`` (real paths); None when it lies in none."""
    parts = real.split("/")
    if ".git" in parts:
        return "/".join(parts[: parts.index(".git") + 1])
    for folder in git_dirs:
        if real == str(folder) or real.startswith(str(folder).rstrip("/") + "/"):
            return str(folder)
    return None


def probe(folder: str) -> None:
    """Write a file in ``folder`` and remove it: a folder that exists but takes no file
    (``/proc/self``, a read-only mount) fails here, before the run, not once it ended."""
    name = f".kiln-probe-{os.getpid()}"
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        out = os.open(name, flags, 0o600, dir_fd=fd)
        try:
            os.write(out, b"kiln")
        finally:
            os.close(out)
        os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


class Artifacts:
    def __init__(self, folder: Path, workspace: Path, git_dirs: tuple[Path, ...] = ()) -> None:
        """``git_dirs``: the checkout's git and common directory, for an ``--artifacts`` folder
        (then no git directory may hold it); none for the session folder under KILN_HOME."""
        self.folder = Path(os.path.abspath(folder))  # as given: its links are walked, not resolved
        self._workspace = os.path.realpath(workspace)
        self._git_dirs = tuple(Path(os.path.realpath(d)) for d in git_dirs)
        self._real: Path | None = None  # the real folder, once made before the agent starts

    def create(self) -> None:
        """Make the folder before the run; a link of the checkout on its path, a folder in a
        git directory, or a folder that cannot be made, is a usage error."""
        try:
            real = real_folder(str(self.folder), self._workspace)
            if real == self._workspace:  # `--artifacts .` (or ""): its outputs were the change
                raise UsageError(
                    f"--artifacts {self.folder} is the workspace itself; refused: the outputs "
                    "would land among the checkout's files and count as the run's change",
                    hint="pass an --artifacts folder outside the checkout, or a folder in it",
                )
            inside = git_folder(real, self._git_dirs) if self._git_dirs else None
            if inside is not None:
                raise UsageError(
                    f"--artifacts {self.folder} is inside the git directory {inside}; refused: "
                    "git reads its hooks and config there",
                    hint="pass an --artifacts folder outside .git, best outside the checkout",
                )
            existed = os.path.isdir(real)
            os.makedirs(real, exist_ok=True)
            try:
                probe(real)
            except OSError as exc:
                if not existed:
                    os.rmdir(real)
                raise UsageError(
                    f"cannot write in the artifacts folder {self.folder}: {exc.strerror or exc}",
                    hint="pass a writable --artifacts folder",
                ) from None
            self._real = Path(real)
        except LinkInWorkspace as link:
            raise UsageError(
                f"--artifacts {self.folder} passes through the link {link.where} inside the "
                "workspace; refused: the checkout chooses where it points",
                hint="pass an --artifacts folder outside the checkout, or one with no links",
            ) from None
        except OSError as exc:
            raise UsageError(
                f"cannot create the artifacts folder {self.folder}: {exc.strerror or exc}",
                hint="pass a writable --artifacts folder",
            ) from None

    def _make(self) -> Path:
        real = real_folder(str(self.folder), self._workspace)
        os.makedirs(real, exist_ok=True)
        return Path(real)

    def open(self) -> Path:
        """Create the folder if needed and check it is the one the run started with."""
        if self._real is None:
            self.create()
        try:
            real = self._make()
        except LinkInWorkspace:
            real = None
        except OSError as exc:
            raise KilnError(f"cannot create {self.folder}: {exc.strerror or exc}") from exc
        if real is None or real != self._real:
            raise ArtifactsMoved(
                f"the artifacts folder {self.folder} was replaced during the run (a link now); "
                "nothing written there"
            )
        return real

    def write(self, name: str, text: str) -> Path:
        """Write ``name`` in the folder; a link (or anything) at that name is replaced."""
        folder = self.open()
        target = folder / name
        temporary = f".{name}.kiln-{os.getpid()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            try:
                os.unlink(temporary, dir_fd=fd)
            except FileNotFoundError:
                pass
            out = os.open(temporary, flags, 0o644, dir_fd=fd)
            with os.fdopen(out, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(text)
            os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError as exc:
            try:
                os.unlink(temporary, dir_fd=fd)
            except OSError:
                pass
            raise KilnError(f"cannot write {target}: {exc.strerror}") from exc
        finally:
            os.close(fd)
        return target

    def remove(self, name: str) -> None:
        """Remove what an earlier run left at ``name`` (a link itself, never its target)."""
        folder = self.open()
        try:
            (folder / name).unlink(missing_ok=True)
        except OSError as exc:
            raise KilnError(f"cannot remove {self.folder / name}: {exc.strerror}") from exc
