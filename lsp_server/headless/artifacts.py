"""The folder a headless run writes its outputs to (patch, summary, report, transcript).

``--artifacts`` may name a folder inside the workspace, where the agent's commands can put links
before Kiln writes there, on the host: a link at ``summary.md`` to ``~/.bashrc`` would have Kiln
overwrite that file with a summary quoting the agent's answer, and the folder itself replaced by
a link would send every output into a folder of the agent's choosing. So the folder is resolved
when the run starts and must still be that real folder when the outputs are written, and each
file is written beside its name and renamed over it, which replaces a link instead of following
it. (No command of the run is alive by then: the sandbox ended each one.)
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.errors import KilnError, UsageError


class ArtifactsMoved(KilnError):
    hint = "keep --artifacts outside the checkout (as the GitHub Action does)"


class Artifacts:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(os.path.abspath(folder))
        self._real = Path(os.path.realpath(self.folder))  # as it is before the agent starts

    def create(self) -> None:
        """Make the folder before the run; one that cannot be made is a usage error."""
        try:
            self.open()
        except OSError as exc:
            raise UsageError(
                f"cannot create the artifacts folder {self.folder}: {exc.strerror or exc}",
                hint="pass a writable --artifacts folder",
            ) from None

    def open(self) -> Path:
        """Create the folder if needed and check it is the one the run started with."""
        if not self.folder.is_symlink():
            self.folder.mkdir(parents=True, exist_ok=True)
        if self.folder.is_symlink() or Path(os.path.realpath(self.folder)) != self._real:
            raise ArtifactsMoved(
                f"the artifacts folder {self.folder} was replaced during the run (a link now); "
                "nothing written there"
            )
        return self._real

    def write(self, name: str, text: str) -> Path:
        """Write ``name`` in the folder; a link (or anything) at that name is replaced."""
        folder = self.open()
        target = folder / name
        temporary = folder / f".{name}.kiln-{os.getpid()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        try:
            temporary.unlink(missing_ok=True)
            fd = os.open(temporary, flags, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(text)
            os.replace(temporary, target)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise KilnError(f"cannot write {target}: {exc.strerror}") from exc
        return target

    def remove(self, name: str) -> None:
        """Remove what an earlier run left at ``name`` (a link itself, never its target)."""
        try:
            (self.open() / name).unlink(missing_ok=True)
        except OSError as exc:
            raise KilnError(f"cannot remove {self.folder / name}: {exc.strerror}") from exc
