"""The program a repository's MCP entry runs, as workspace files whose sha256 its approval holds.

Approving ``python srv.py`` approves that ``srv.py``: a checkout that changes it is pending
again. The program is not always a file the entry names: ``python -m srvpkg.main`` runs a module
of the package ``srvpkg`` (its ``__init__.py``, the modules it imports, bytecode Python runs
without checking its source), and ``node ./srv`` or ``npx ./srv`` a folder (its
``package.json``, the ``main`` or ``bin`` it names, ``index.js``), ``node srv/main`` the file
``srv/main.js``, and ``"command": "srv"`` with ``"env": {"PATH": "tools:…"}`` the file
``tools/srv``, ``sh -c "python3 srv.py"`` the ``srv.py`` inside its string. Those are hashed
too: the module's top-level package, the folder's program files
(bounded, ``node_modules`` left out). Files a program imports from elsewhere without the entry
naming them are not covered (docs/security.md section 6a).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_HASHED = 64 * 1024 * 1024  # bytes of one file read into an entry's fingerprint
MAX_FOLDER_FILES = 2_000  # program files of one folder an approval holds
# An argument file with one of these suffixes is part of the program an entry runs (its source, a
# script, a config that says what the program does); so is one that is executable or starts with
# "#!". Any other file is the server's data: a database or log it writes as it runs was hashed
# too, and an approved server was "changed since you approved it" after its first run.
# fmt: off
PROGRAM_SUFFIXES = frozenset({
    ".py", ".pyw", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx", ".sh",
    ".bash", ".zsh", ".fish", ".ps1", ".bat", ".cmd", ".rb", ".pl", ".pm", ".php", ".lua", ".jar",
    ".java", ".kt", ".kts", ".groovy", ".scala", ".clj", ".go", ".r", ".jl", ".ex", ".exs", ".tcl",
    ".swift", ".dart", ".wasm", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env",
    ".properties",
})
# fmt: on
# Commands whose first operand, a folder, is the program (`node ./srv` runs its package.json's
# main or index.js; `npx ./srv` its bin; `python DIR` its __main__.py); `node srv/main` finds
# `srv/main.js`. `uv run`, `deno run`, `bun run` take the operand after `run`.
RUNNERS = frozenset({"node", "nodejs", "npx", "bun", "bunx", "deno", "uv", "uvx", "tsx"})
NODE_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".json")
MODULE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
SKIPPED_FOLDERS = frozenset({"node_modules", ".git", ".venv", "venv"})


@dataclass
class Program:
    """sha256 by what the entry names (a word, ``-m MODULE``, a folder's file); ``unheld`` says
    why the approval cannot hold the program (a folder of too many files)."""

    files: dict[str, str] = field(default_factory=dict)
    unheld: str = ""


def workspace_program(
    origin: Path, command: Any, args: list[Any], cwd: str | None, env: dict[str, str]
) -> Program:
    """The program files of the workspace (``origin``'s ``.kiln/..``) the entry runs: its command,
    each argument (or ``--opt=`` value) that is a program file (``_is_program``), the module of
    ``-m``, and the folder or extension-less file a runner's operand names, each read where the
    server would resolve it."""
    root = origin.resolve().parent.parent
    base = root / cwd if cwd else root
    out = Program()
    line = _shell_words(command, args)
    while line and (line[0] == "exec" or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", line[0])):
        line = line[1:]
    if line:  # `sh -c "exec python3 -m srvpkg"`: the line's program, as if it were the entry's
        inner = workspace_program(origin, line[0], line[1:], cwd, env)
        out.files.update(inner.files)
        out.unheld = inner.unheld
    words = [(command, True)] + [(_option_value(a), False) for a in [*args, *line]]
    for word, is_command in words:
        if isinstance(word, str) and word and "\0" not in word:
            path = _inside(root, base / word)
            if path is not None and path.is_file():
                _hash_file(out, word, path, always=is_command)
    if isinstance(command, str) and command and "/" not in command and "\0" not in command:
        for folder in _path_folders(env.get("PATH", "")):  # the entry's own PATH: `tools:…`
            found = _inside(root, base / folder / command)
            if found is not None and found.is_file():
                _hash_file(out, f"PATH {folder}/{command}", found, always=True)
                break
    operand = _runner_operand(command, args)
    if operand is not None:
        path = _inside(root, base / operand)
        if path is not None and path.is_dir():
            _hash_folder(out, operand, path, root)
        elif path is None or not path.exists():
            tries = (_inside(root, base / (operand + s)) for s in NODE_SUFFIXES)
            file = next((p for p in tries if p is not None and p.is_file()), None)
            if file is not None:
                _hash_file(out, operand + file.suffix, file, always=True)
    module = _module(args)
    if module is not None:
        top = module.split(".")[0]
        for where in [base, *(base / p for p in _path_folders(env.get("PYTHONPATH", "")))]:
            package, single = _inside(root, where / top), _inside(root, where / f"{top}.py")
            if package is not None and package.is_dir():
                _hash_folder(out, f"-m {module}", package, root)
            elif single is not None and single.is_file():
                _hash_file(out, f"-m {module}", single, always=True)
    return out


def _path_folders(value: str) -> list[str]:
    """The folders of a ``PATH``-like variable (empty entries mean the current folder)."""
    return [x or "." for x in value.split(os.pathsep) if "\0" not in x]


def _inside(root: Path, path: Path) -> Path | None:
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return resolved if root in resolved.parents else None


def _hash_file(out: Program, key: str, path: Path, *, always: bool) -> None:
    try:
        with path.open("rb") as handle:
            if not always and not _is_program(path, handle.read(2)):
                return
            handle.seek(0)
            out.files[key] = hashlib.sha256(handle.read(MAX_HASHED)).hexdigest()
    except (OSError, ValueError):
        return


def _hash_folder(out: Program, key: str, folder: Path, root: Path) -> None:
    """One digest over the program files under ``folder`` (links not followed; ``node_modules``
    and virtual environments left out), or ``unheld`` past ``MAX_FOLDER_FILES`` of them."""
    digest = hashlib.sha256()
    count = 0
    for where, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        for name in sorted(files):
            path = Path(where, name)
            if path.is_symlink() or not _runs(path):
                continue
            count += 1
            if count > MAX_FOLDER_FILES:
                shown = folder.relative_to(root).as_posix()
                out.unheld = (
                    f"{shown} holds more than {MAX_FOLDER_FILES:,} program files, more than an "
                    "approval holds"
                )
                return
            try:
                data = path.read_bytes()[:MAX_HASHED]
            except OSError:
                continue
            rel = path.relative_to(folder).as_posix()
            digest.update(f"{rel}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    out.files[key] = digest.hexdigest()


def _runs(path: Path) -> bool:
    """A file of a folder that is part of the program: source, config, ``package.json``, and
    bytecode Python runs without checking it against its source (a ``.pyc`` marked
    unchecked-hash, or one outside ``__pycache__``, which Python runs when the source is absent);
    the bytecode Python writes itself as it runs is checked against its source, so not hashed."""
    suffix = path.suffix.lower()
    if suffix in PROGRAM_SUFFIXES or path.name == "package.json":
        return True
    if suffix != ".pyc":
        return False
    if path.parent.name != "__pycache__":
        return True
    try:
        with path.open("rb") as handle:
            flags = int.from_bytes(handle.read(8)[4:8], "little")
    except OSError:
        return True
    return flags & 0b11 == 0b01


def _runner_operand(command: Any, args: list[Any]) -> str | None:
    """The first operand of a runner command (``node ./srv``, ``npx -y ./srv``, ``uv run x``)."""
    if not isinstance(command, str):
        return None
    name = Path(command).name
    if name not in RUNNERS and not name.startswith("python"):
        return None
    operands = [a for a in args if isinstance(a, str) and a and not a.startswith("-")]
    if operands[:1] == ["run"] and name in ("uv", "deno", "bun"):
        operands = operands[1:]
    if not operands or "\0" in operands[0]:
        return None
    return operands[0]


def _shell_words(command: Any, args: list[Any]) -> list[str]:
    """The words of a shell's ``-c`` string (``sh -c "python3 srv.py"`` names ``srv.py``)."""
    if not isinstance(command, str) or Path(command).name not in SHELLS:
        return []
    for flag, line in zip(args, args[1:], strict=False):
        if isinstance(flag, str) and re.fullmatch(r"-[a-z]*c", flag) and isinstance(line, str):
            try:
                return shlex.split(line)
            except ValueError:
                return line.split()
    return []


# Python's flags that take no value, which may come before ``m`` in one word: ``-um srvpkg``.
PYTHON_FLAGS = "bBdEhiIOPqRsSuvx"


def _module(args: list[Any]) -> str | None:
    """The module of ``-m MODULE`` (or ``-mMODULE``, ``-um MODULE``), as Python and ``uv run
    -m`` take it."""
    for i, word in enumerate(args):
        found = re.match(rf"-[{PYTHON_FLAGS}]*m", word) if isinstance(word, str) else None
        if found is None:
            continue
        module = word[found.end() :] or (str(args[i + 1]) if i + 1 < len(args) else "")
        if MODULE.match(module):
            return module
    return None


def _option_value(word: Any) -> Any:
    """``--script=srv.py`` names ``srv.py``; any other word names itself."""
    if isinstance(word, str) and word.startswith("-") and "=" in word:
        return word.split("=", 1)[1]
    return word


def _is_program(path: Path, head: bytes) -> bool:
    return (
        path.suffix.lower() in PROGRAM_SUFFIXES
        or head == b"#!"
        or bool(path.stat().st_mode & 0o111)
    )
