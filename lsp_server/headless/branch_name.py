"""The `--commit-branch` name, checked before the run: a name git would refuse at the end, after
the agent spent its time and the model its money, is refused first, with exit code 2."""

from __future__ import annotations

from agent.errors import UsageError
from lsp_server.headless.repo_git import Layout

# git keeps a branch as a file (`refs/heads/kiln/fix`, and `kiln/fix.lock` while writing it):
# each part of the name is a file name, at most 255 bytes on the usual file systems
PART_BYTES = 255 - len(".lock")


# git's root refs besides `HEAD` and `*_HEAD` (refs.c: `irregular_root_refs`)
IRREGULAR_ROOT_REFS = {"AUTO_MERGE", "BISECT_EXPECTED_REV", "NOTES_MERGE_PARTIAL",
                       "NOTES_MERGE_REF", "MERGE_AUTOSTASH"}  # fmt: skip


def reads_as_another_ref(branch: str) -> bool:
    """A name git resolves to something else before `refs/heads/NAME`: `@` (HEAD), an option
    (`-x`), a root ref (`HEAD`, `ORIG_HEAD`, `AUTO_MERGE`), or `refs/NAME` (`refs/…`, `tags/…`,
    `heads/…`, `remotes/…`); git's order is `NAME`, `refs/NAME`, `refs/tags/NAME`, then the
    branch."""
    root_ref = set(branch) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZ_-") and (
        branch == "HEAD" or branch.endswith("_HEAD") or branch in IRREGULAR_ROOT_REFS
    )
    return (
        branch == "@"
        or branch.startswith(("-", "refs/", "tags/", "heads/", "remotes/"))
        or root_ref
    )


def check_branch(layout: Layout, branch: str) -> None:
    """Refuse a bad or taken branch name before the run, so it never ends half-committed."""
    # the name as given, not as `check-ref-format --branch` expands it (`@{-1}` is the branch
    # checked out before, a name update-ref then refuses after the whole run); and not one that
    # reads as another ref (`refs/heads/x` made refs/heads/refs/heads/x, `HEAD`, `@`, a tag's)
    bad = f"--commit-branch {branch!r} is not a valid branch name"
    if (
        reads_as_another_ref(branch)
        or layout.run("check-ref-format", f"refs/heads/{branch}").returncode
        or any(layout.run("rev-parse", "--verify", "--quiet", ref).returncode == 0
               for ref in (f"refs/{branch}", f"refs/tags/{branch}"))  # `stash`, a tag's name
    ):  # fmt: skip
        raise UsageError(bad)
    for part in branch.split("/"):
        if len(part.encode("utf-8", "surrogateescape")) > PART_BYTES:
            raise UsageError(f"{bad}: its part {part[:12] + '…'!r} is longer than "
                             f"{PART_BYTES} bytes, more than git can keep in a file name")  # fmt: skip
    if layout.run("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0:
        raise UsageError(
            f"branch {branch!r} already exists", hint="choose a new --commit-branch name"
        )
    _check_folders(layout, branch)


def _check_folders(layout: Layout, branch: str) -> None:
    """A branch cannot be made where a branch is a folder of its name or its name a folder of
    branches (`kiln/fix/more` beside `kiln/fix`, `kiln` beside `kiln/fix`): git stores both as
    files under `refs/heads`, and `update-ref` failed after the run."""
    heads = [name.removeprefix("refs/heads/") for name, _ in layout.refs
             if name.startswith("refs/heads/")]  # fmt: skip
    parts = branch.split("/")
    for n in range(1, len(parts)):
        above = "/".join(parts[:n])
        if above in heads:
            raise UsageError(
                f"--commit-branch {branch!r} cannot be made: branch {above!r} exists, and a "
                "branch cannot also be a folder of branches",
                hint="choose a new --commit-branch name",
            )
    below = sorted(h for h in heads if h.startswith(f"{branch}/"))
    if below:
        raise UsageError(
            f"--commit-branch {branch!r} cannot be made: branches '{branch}/…' exist "
            f"({', '.join(below[:3])}), and a folder of branches cannot also be a branch",
            hint="choose a new --commit-branch name",
        )
