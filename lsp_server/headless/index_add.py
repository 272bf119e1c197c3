"""How Kiln stages the run's changed paths in its throw-away index (the patch's and the branch
commit's): ``git add -A`` of each path by name, less the ones git ignores.

A path the recorded ``HEAD`` does not track and an ignore rule matches is no change of the
run's: ``git status`` shows none, and ``git add`` refuses it by name ("The following paths are
ignored", exit 1), which ended the run with no patch. Such a path reaches the list when the
agent checked out another commit: one that tracks the user's ignored ``local.cfg``, say, makes
it part of the commits' difference. It is left out, as ``git add -A .`` leaves it, never added
with ``-f``: the user's ignored files (``.env``) stay out of the patch and the branch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lsp_server.headless.repo_git import Layout

EXCLUDE = [":(exclude).kiln", ":(exclude).kiln/**"]


def literal(paths: list[str]) -> list[str]:
    """Names as pathspecs that match only themselves: git reads ``*``, ``[g]`` and a leading
    ``:(glob)`` in a pathspec as a pattern, so a file the agent names ``:(glob)**`` took every
    file along, the workflow's cloud key (``gha-creds-….json``, there before the run) included."""
    return [f":(literal){p}" for p in paths]


def ignored(layout: Layout, paths: list[str], env: dict[str, str]) -> set[str]:
    """The ``paths`` (workspace-relative) that the index in ``env`` does not hold and an ignore
    rule matches. ``check-ignore`` reads names, not patterns, and looks away from a path the
    index tracks; when it cannot answer (a path beyond a link: git add fails on it too), none."""
    if not paths:
        return set()
    proc = layout.run("check-ignore", "-z", "--stdin", env=env, stdin="\0".join(paths) + "\0")
    if proc.returncode not in (0, 1):
        return set()
    return {p for p in proc.stdout.split("\0") if p}


def add(layout: Layout, paths: list[str], env: dict[str, str]) -> None:
    """``git add -A`` of ``paths`` (less the ignored ones) in the index ``env`` names, named
    through stdin (a million names do not fit argv)."""
    wanted = [p for p in paths if p not in ignored(layout, paths, env)]
    listing = "\0".join([*literal(wanted), *EXCLUDE]) + "\0"
    layout.git("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", env=env, stdin=listing)
    # A nested repository the run made is added as a gitlink: in the branch (and the index
    # the checkout moves to) it would have a workflow's later `git status` run its config.
    staged = _gitlinks(layout.git("ls-files", "--stage", "-z", env=env))
    if staged and layout.head:
        staged -= _gitlinks(layout.git("ls-tree", "-r", "-z", layout.head, "--", "."))
    if staged:
        layout.git("update-index", "--force-remove", "-z", "--stdin", env=env,
                   stdin="\0".join(sorted(staged)) + "\0")  # fmt: skip


def _gitlinks(listing: str) -> set[str]:
    """The gitlink paths of ``ls-files --stage -z`` or ``ls-tree -r -z`` output."""
    return {e.split("\t", 1)[-1] for e in listing.split("\0") if e.startswith("160000 ")}
