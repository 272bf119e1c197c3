"""The ignore files the index honours, by git's rules: ``.gitignore`` in every folder, the
repository's own ``.git/info/exclude``, and ``.ignore`` (ripgrep's, fd's and ag's file for what
search tools should skip but git should track), each read bounded (docs/security.md).

Precedence is git's: a deeper folder's file beats one above, ``.ignore`` beats the
``.gitignore`` beside it, ``.git/info/exclude`` comes under the root's ``.gitignore``; within
a file the last matching pattern decides, so ``!keep.py`` brings back what a pattern above it
ignored.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pathspec
from pathspec.patterns.gitwildmatch import GitWildMatchPattern

from indexer.reading import read_regular

MAX_IGNORE_BYTES = 1_000_000  # a longer ignore file is read up to here
MAX_IGNORE_PATTERNS = 2000  # the patterns of an ignore file that count, in order
# Characters of a pattern; a longer one is dropped. pathspec's regular expression for it cost
# more than its length squared to compile: one line of 1 MB held `kiln index` for 12 s each time
# the file was read, and a path is never longer (``MAX_PATH_CHARS`` in files.py).
MAX_PATTERN_CHARS = 4096
MAX_STARS = 2  # "*" per segment of a pattern; a pattern with more is dropped
# "**" segments of a pattern but a last one; a pattern with more is dropped. Each becomes
# ``(?:/.+)?``, which backtracks over every way to split a path among them: ``**/a/`` eight
# times then ``zz`` took 34 s on one file 40 folders deep, each one more ten times that.
MAX_DEEP = 2
FOLDER_FILES = (".gitignore", ".ignore")  # in a folder, by rising precedence
ROOT_EXCLUDE = (".git", "info", "exclude")  # under the root's .gitignore
# (folder prefix ending in "/", or "" for the root; its patterns), lowest precedence first
Specs = list[tuple[str, pathspec.PathSpec]]


class _SpecCache:
    """Compiled ignore files by path, valid while the file's stat is unchanged: one file's
    update (every keystroke in an editor) checks each folder above it, and compiling the
    patterns costs far more than a ``stat``."""

    SIZE = 256

    def __init__(self) -> None:
        self._items: dict[str, tuple[tuple[int, ...], pathspec.PathSpec]] = {}

    def signed(self, path: str) -> tuple[tuple[int, ...] | None, pathspec.PathSpec | None]:
        """The file's stat signature and compiled patterns; (None, None) when it is absent."""
        try:
            st = os.stat(path)
            sig = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
            hit = self._items.get(path)
            if hit is not None and hit[0] == sig:
                return hit
            data = read_regular(path, MAX_IGNORE_BYTES)  # a FIFO or /dev/zero: see reading.py
        except OSError:
            return None, None
        if len(data) > MAX_IGNORE_BYTES:  # the patterns of its first MAX_IGNORE_BYTES
            data = data[:MAX_IGNORE_BYTES].rsplit(b"\n", 1)[0]
        text = data.decode("utf-8", errors="replace")
        spec = pathspec.PathSpec(_compiled(tame_patterns(text.splitlines())))
        if len(self._items) >= self.SIZE:
            self._items.pop(next(iter(self._items)), None)
        self._items[path] = (sig, spec)
        return sig, spec


def tame_patterns(lines: list[str]) -> list[str]:
    """The lines of an ignore file safe to match: pathspec turns each into a regular
    expression, and one segment with many ``*`` (``*a*a*a*a*zz``) backtracks for minutes on a
    long name, as do many ``**`` on a deep path (``MAX_DEEP``), so such a pattern is dropped,
    as is one too long to compile quickly (``MAX_PATTERN_CHARS``);
    past ``MAX_IGNORE_PATTERNS`` patterns the rest are dropped (each is tried on every file:
    100,000 cost ~70 ms per file)."""
    kept: list[str] = []
    for line in lines:
        pattern = line.strip()
        if not pattern or pattern.startswith("#") or len(pattern) > MAX_PATTERN_CHARS:
            continue
        segments = pattern.removeprefix("!").split("/")
        if any(seg != "**" and seg.count("*") > MAX_STARS for seg in segments):
            continue
        if segments[:-1].count("**") > MAX_DEEP:  # a last "/**" is ``/.*``: no backtracking
            continue
        kept.append(line)
        if len(kept) >= MAX_IGNORE_PATTERNS:
            break
    return kept


def _compiled(lines: list[str]) -> list[GitWildMatchPattern]:
    """The patterns git can use: one it cannot parse (a trailing ``\\``, a range ``[z-a]``)
    matches nothing in git, which goes on with the rest; compiling the file whole raised on it
    and ended `kiln index` in a traceback."""
    patterns = []
    for line in lines:
        try:
            patterns.append(GitWildMatchPattern(line))
        except (ValueError, re.error):
            continue
    return patterns


_specs = _SpecCache()
# path_ignored()'s answers: (root, rel) -> (signatures of the ignore files on the way, answer)
_verdicts: dict[tuple[str, str], tuple[tuple, bool]] = {}
VERDICTS = 4096


def root_specs(root: Path) -> Specs:
    """The patterns that hold before the root's own files: ``.git/info/exclude``."""
    spec = _specs.signed(os.path.join(root, *ROOT_EXCLUDE))[1]
    return [] if spec is None else [("", spec)]


def folder_specs(folder: Path, rel_folder: str, specs: Specs) -> Specs:
    """``specs`` and the ignore files of ``folder`` (at ``rel_folder``) after them."""
    for name in FOLDER_FILES:
        spec = _specs.signed(os.path.join(folder, name))[1]
        if spec is not None:
            specs = [*specs, (rel_folder, spec)]
    return specs


def ignored(specs: Specs, rel: str) -> bool:
    """Git's rule: the file of highest precedence with a pattern matching ``rel`` decides, by
    its last matching pattern (a match anywhere used to ignore: a folder's ``!keep.py`` could
    not bring back what a ``.gitignore`` above ignored)."""
    for base, spec in reversed(specs):
        if rel.startswith(base):
            verdict = spec.check_file(rel[len(base) :]).include
            if verdict is not None:
                return bool(verdict)
    return False


def path_ignored(root: Path, parts: list[str]) -> bool:
    """Whether the file ``parts`` (its path split at "/"), or a folder on the way to it, is
    ignored. Asked on every edit of a file: the answer is kept while the ignore files on the
    way are unchanged (matching their patterns costs far more than the ``stat`` of each)."""
    folder = str(root)
    signed = [[_specs.signed(os.path.join(folder, *ROOT_EXCLUDE))]]
    for depth in range(len(parts)):
        if depth:
            folder = os.path.join(folder, parts[depth - 1])
        signed[-1].extend(_specs.signed(os.path.join(folder, name)) for name in FOLDER_FILES)
        signed.append([])
    key = (str(root), "/".join(parts))
    sigs = tuple(sig for level in signed for sig, _ in level)
    kept = _verdicts.get(key)
    if kept is not None and kept[0] == sigs:
        return kept[1]
    verdict = _ignored_on_the_way(parts, [[spec for _, spec in level] for level in signed])
    if len(_verdicts) >= VERDICTS:
        _verdicts.pop(next(iter(_verdicts)), None)
    _verdicts[key] = (sigs, verdict)
    return verdict


def _ignored_on_the_way(parts: list[str], levels: list[list[pathspec.PathSpec | None]]) -> bool:
    """Whether a folder on the way to the file ``parts``, or the file, is ignored by the
    ignore files ``levels`` (per folder from the root, lowest precedence first)."""
    active: Specs = []
    base = ""
    for depth in range(len(parts)):
        if depth:
            base = f"{base}{parts[depth - 1]}/"
            if ignored(active, base):
                return True
        active.extend((base, spec) for spec in levels[depth] if spec is not None)
    return ignored(active, "/".join(parts))
