"""Memory files: KILN.md, AGENTS.md and CLAUDE.md at user level, the workspace root, and in
subdirectories (loaded the first time the agent touches something under them).

Each file becomes a tagged ``<memory>`` block appended at the tail, user before project before
subdirectory, so the frozen prefix never changes. ``@path`` lines import other files (relative or
``~``), with a depth limit and cycle detection; a missing import is a visible note, not a crash.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

from agent.workspace import atomic_write

MEMORY_NAMES = ("KILN.md", "AGENTS.md", "CLAUDE.md")
MAX_DEPTH = 5
MAX_BYTES = 40_000
IMPORT_RE = re.compile(r"^\s*@(\S+)\s*$")
_write_lock = threading.Lock()


def expand_imports(path: Path, depth: int = 0, seen: frozenset[Path] = frozenset()) -> str:
    """The file's text with ``@path`` lines replaced by the imported files' text."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"[memory note: cannot read {path}: {exc.strerror}]"
    out: list[str] = []
    for line in text.splitlines():
        m = IMPORT_RE.match(line)
        if not m:
            out.append(line)
            continue
        target_raw = m.group(1)
        target = Path(os.path.expanduser(target_raw))
        if not target.is_absolute():
            target = path.parent / target
        target = target.resolve()
        if target in seen or target == path.resolve():
            out.append(f"[memory note: import cycle at @{target_raw} skipped]")
        elif depth + 1 > MAX_DEPTH:
            out.append(
                f"[memory note: @{target_raw} skipped: imports nest deeper than {MAX_DEPTH}]"
            )
        elif not target.is_file():
            out.append(f"[memory note: @{target_raw} not found]")
        else:
            out.append(expand_imports(target, depth + 1, seen | {path.resolve()}))
    return "\n".join(out)


def _block(level: str, path: Path) -> str:
    text = expand_imports(path)
    note = ""
    if len(text.encode()) > MAX_BYTES:
        text = text.encode()[:MAX_BYTES].decode("utf-8", "ignore")
        note = (
            f"\n[memory note: {path.name} truncated to {MAX_BYTES} bytes; keep memory files short]"
        )
    return f'<memory level="{level}" source="{path}">\n{text.strip()}{note}\n</memory>'


class Memory:
    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        self.loaded_dirs: set[Path] = set()

    def initial_blocks(self) -> list[str]:
        blocks = [_block("user", self.home / n) for n in MEMORY_NAMES if (self.home / n).is_file()]
        blocks += [
            _block("project", self.root / n) for n in MEMORY_NAMES if (self.root / n).is_file()
        ]
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
            blocks += [
                _block("subdirectory", current / n) for n in MEMORY_NAMES if (current / n).is_file()
            ]
        return blocks

    def project_file(self) -> Path:
        for name in MEMORY_NAMES:
            if (self.root / name).is_file():
                return self.root / name
        return self.root / "KILN.md"

    def user_file(self) -> Path:
        for name in MEMORY_NAMES:
            if (self.home / name).is_file():
                return self.home / name
        return self.home / "KILN.md"

    def append(self, text: str, target: Path | None = None) -> Path:
        """Append one bullet atomically, keeping the user's formatting; safe across threads and
        processes (two sessions remembering at once both land)."""
        target = target or self.project_file()
        line = " ".join(text.split())
        with _locked(self.home, target):
            old = target.read_text(encoding="utf-8") if target.exists() else "# Memory\n\n"
            sep = "" if not old or old.endswith("\n") else "\n"
            atomic_write(target, f"{old}{sep}- {line}\n")
        return target


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
