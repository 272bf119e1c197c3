"""Whether the index may read the history of the repository git finds at the workspace.

``git log`` in the workspace reads whichever repository git's discovery lands on: the nearest
``.git`` at or above the workspace, and, when that is a file (``gitdir: …``) or a link, the git
folder it names, wherever that is; a git folder's ``commondir`` file sends the refs and objects
elsewhere again. A folder unpacked from an archive can ship either, naming one of the user's
private repositories (``gitdir: /home/me/work/.git``), and its commit messages and paths became
the index's history, which searches show and the model reads. So a git folder outside the tree
holding the ``.git`` is followed only where git itself put one: a linked worktree's (its
``gitdir`` file in the repository's ``worktrees`` folder names this ``.git`` back) or a
submodule's (in the ``modules`` folder of a repository above), and objects only from stores in
the tree or the git folder (``objects/info/alternates`` sends git to any). A repository another
user owns is not read either, unless the user's ``safe.directory`` lists it
(``kiln_errors.ownership``), as git refuses it.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from pathlib import Path

from indexer.reading import NotRegular, read_regular
from kiln_errors.ownership import foreign

_MAX_POINTER = 4096  # a ``gitdir:`` or ``commondir`` file: one path
_MAX_ALTERNATES = 64 << 10  # an ``objects/info/alternates`` listing: a few paths
_ALTERNATES_DEPTH = 5  # git's own bound on alternates of alternates


def _text(path: Path) -> str | None:
    """The stripped text of a small regular file, or None (missing, too big, not a file)."""
    try:
        data = read_regular(path, _MAX_POINTER)
    except OSError:
        return None
    if len(data) > _MAX_POINTER:
        return None
    return data.decode("utf-8", "surrogateescape").strip()


def _git_dir(dotgit: Path) -> Path | None:
    """The git folder ``dotgit`` leads git to: the folder itself (a link followed) or the one a
    ``gitdir:`` file names, relative to the file's folder; None when it leads nowhere."""
    if dotgit.is_dir():
        return dotgit.resolve()
    text = _text(dotgit)
    if text is None or not text.startswith("gitdir:"):
        return None
    return (dotgit.parent / text[len("gitdir:") :].strip()).resolve()


def _common(git_dir: Path) -> Path:
    """Where a git folder's refs and objects are: what its ``commondir`` names, else itself."""
    text = _text(git_dir / "commondir")
    return (git_dir / text).resolve() if text else git_dir


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _worktree_of(top: Path, git_dir: Path) -> bool:
    """Whether ``git_dir`` is the one `git worktree add` made for the work tree ``top``: in a
    repository's ``worktrees`` folder, its ``gitdir`` file naming ``top/.git`` back."""
    back = _text(git_dir / "gitdir")
    if git_dir.parent.name != "worktrees" or not back:
        return False
    return (git_dir / back).resolve() == (top / ".git").resolve()


def _module_of(top: Path, places: tuple[Path, ...]) -> bool:
    """Whether ``places`` lie in the ``modules`` folder of the git folder of a repository
    above ``top`` (a submodule's, as `git submodule` keeps them)."""
    for above in top.parents:
        theirs = _git_dir(above / ".git") if os.path.lexists(above / ".git") else None
        if theirs is None:
            continue
        for folder in {theirs, _common(theirs)}:
            if all(_inside(p, folder) and "modules" in p.relative_to(folder).parts for p in places):
                return True
    return False


def _repository_top(root: Path) -> Path | None:
    """The folder whose ``.git`` git takes at ``root``: the nearest holding a ``.git`` link,
    file, or folder with a ``HEAD`` (one without is no git folder: git looks further up)."""
    root = root.resolve()
    for top in (root, *root.parents):
        dotgit = top / ".git"
        if not os.path.lexists(dotgit):
            continue
        if dotgit.is_dir() and not (dotgit / "HEAD").exists():
            continue
        return top
    return None


def readable(root: Path) -> bool:
    """Whether the history git would read at ``root`` is the workspace's own to read: the
    repository it finds is the user's (or listed in ``safe.directory``), and its git folder is
    inside that repository's tree, a linked worktree's or a submodule's. True where git finds no
    repository (there is nothing to read)."""
    top = _repository_top(root)
    if top is None:
        return True
    if foreign(top):
        return False
    return _led_out(top) is None and _borrowed(top) is None


def led_out(root: Path) -> str | None:
    """Why the history at ``root`` is not read when the ``.git`` git takes there leads out of
    its tree to a git folder that is no worktree's or submodule's (``git init
    --separate-git-dir``, or a shipped ``.git`` file naming one of the user's repositories: the
    two look the same), or its objects are borrowed from out of it (``_borrowed``), as one
    ``path: reason`` line; None otherwise."""
    top = _repository_top(root)
    if top is None or foreign(top):
        return None
    where = _led_out(top)
    if where == top / ".git":  # a .git file naming nothing: git fails too
        return None
    if where is not None:
        return (
            f"{_shown(root, top / '.git')}: names a git folder outside the repository ({where})"
            " that is no worktree's or submodule's, as a shipped .git file naming another"
            " repository would: the git history is not read"
        )
    borrowed = _borrowed(top)
    if borrowed is None:
        return None
    listing, store = borrowed
    hint = " (`git repack -a -d`, then removing that file, keeps them here)"
    return (
        f"{_shown(root, listing)}: borrows objects from {store}, outside the repository: the git"
        f" history is not read{hint if listing.name == 'alternates' else ''}"
    )


def _shown(root: Path, path: Path) -> str:
    base = root.resolve()
    return path.relative_to(base).as_posix() if _inside(path, base) else str(path)


def _led_out(top: Path) -> Path | None:
    """The git folder out of ``top`` that its ``.git`` leads git to (``top/.git`` itself when it
    leads nowhere); None when its git folder and common dir are inside ``top``, or where git put
    them: a linked worktree's or a submodule's."""
    git_dir = _git_dir(top / ".git")
    if git_dir is None:
        return top / ".git"
    places = (git_dir, _common(git_dir))
    if all(_inside(p, top) for p in places):
        return None
    if _worktree_of(top, git_dir) or _module_of(top, places):
        return None
    return next(p for p in places if not _inside(p, top))


def _borrowed(top: Path) -> tuple[Path, Path] | None:
    """An object store out of the repository that git would read objects from, with the
    ``objects/info/alternates`` listing (or the link, ``_linked_out``) that names it: a ``.git`` shipped with one naming the
    objects of the user's private repository, and a ``HEAD`` naming one of its commits, made its
    history the index's; a listing out there that is a FIFO held git (only ``GIT_ALTERNATE_OBJECT_
    DIRECTORIES``, which the index's git calls never pass on, names them otherwise). Listings are
    followed as deep as git follows them; one inside that is no regular file counts as out."""
    git_dir = _git_dir(top / ".git")
    if git_dir is None:
        return None
    common = _common(git_dir)
    todo, seen = [(common / "objects", 0)], set()
    while todo:
        objects, depth = todo.pop()
        listing = objects / "info" / "alternates"
        if objects in seen or depth > _ALTERNATES_DEPTH:
            continue
        seen.add(objects)
        linked = _linked_out(objects, lambda path: _inside(path, top) or _inside(path, common))
        if linked is not None:
            return linked
        try:
            data = read_regular(listing, _MAX_ALTERNATES)
        except NotRegular:
            if depth == 0:
                continue  # git's own listing: ``git_files.blocker`` says it is a FIFO
            return listing, listing
        except OSError:
            continue
        if len(data) > _MAX_ALTERNATES:
            return listing, listing
        for entry in os.fsdecode(data).split("\n"):
            if not entry or entry.startswith("#"):
                continue
            if entry.startswith('"') and entry.endswith('"') and len(entry) > 1:  # C-quoted
                entry = os.fsdecode(codecs.escape_decode(os.fsencode(entry[1:-1]))[0])
            store = (objects / entry).resolve()  # relative to the objects folder, as git reads
            if not (_inside(store, top) or _inside(store, common)):
                return listing, store
            todo.append((store, depth + 1))
    return None


def _linked_out(objects: Path, inside: Callable[[Path], bool]) -> tuple[Path, Path] | None:
    """A link that leads git's reads of the object store ``objects`` out (the folder itself, a
    folder of loose objects, the ``pack`` folder or a pack in it), with where it leads: a
    shipped ``.git/objects`` linking to the user's private repository's objects is as good as
    an alternates listing naming them. Loose objects are not looked at one by one."""
    found = [objects]
    for folder in (objects, objects / "pack"):
        try:
            with os.scandir(folder) as entries:
                found += [Path(entry.path) for entry in entries if entry.is_symlink()]
        except OSError:
            continue
    for path in found:
        if path.is_symlink() and not inside(target := path.resolve()):
            return path, target
    return None


def folders(root: Path) -> tuple[Path, Path] | None:
    """The git folder git finds at ``root`` and its common dir (config, refs, objects), found
    as ``readable`` finds them; None where git finds no repository."""
    top = _repository_top(root)
    git_dir = None if top is None else _git_dir(top / ".git")
    return None if git_dir is None else (git_dir, _common(git_dir))
