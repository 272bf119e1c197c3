"""Kiln's own git calls on the repository under CI: the changed paths, the patch and the branch
commit. They run on the host, outside the sandbox, in a checkout the repository's author and the
agent control, so:

- the options in ``SAFE_GIT`` and ``filter_overrides`` switch off everything in a config that
  would run a program (hooks, fsmonitor, pagers, external diffs and textconv, filter drivers,
  ssh, credential helpers, signing, automatic gc, any transport: ``GIT_ALLOW_PROTOCOL``) or
  follow submodules;
- the repository's layout (work tree, git dir, common dir, ``HEAD``) is recorded when the run
  starts (``Layout.record``) and every later call is pinned to it through ``GIT_DIR``,
  ``GIT_COMMON_DIR`` and ``GIT_WORK_TREE``: a ``.git/commondir`` or ``.git/config.worktree``
  written during the run cannot make Kiln read another folder as the work tree (and put a host
  file into the patch) or take config and hooks from elsewhere;
- every ref is put back where the run found it (``restore_refs``), the patch is taken against
  the recorded ``HEAD``, and the branch commit is built from the same throw-away index as the
  patch, so the branch holds what the patch shows and nothing the agent committed, tagged or
  staged on its own;
- the patch is bounded (``Limits``): too many files or bytes end the run's outputs with one line,
  before anything is written or committed.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from agent.errors import KilnError, UsageError
from indexer import git_files
from kiln_errors.host_path import host_env
from lsp_server.headless import git_skeleton, index_add, index_flags, stash_log
from lsp_server.headless.git_nested import nested_repositories
from lsp_server.headless.patch_limits import Limits, PatchTooLarge, too_large

TIMEOUT = 600.0  # seconds for one git call (a large repository's status or add)
# Seconds for the calls that first read the configs (the repository's and each nested one's,
# before every call: ``filter_overrides``): git opens each ``include.path`` file at start-up,
# and one a command swapped for a FIFO (``include.path = ../shared.gitconfig``, a tracked file)
# would hold every call for ``TIMEOUT``. Such a file (a FIFO, a device) is looked for first
# (``git_files.waits_on``), never opened, and the call refused at once; the timeout is a backstop.
CONFIG_TIMEOUT = 20.0

SAFE_GIT = [
    "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.sshCommand=false",
    "-c", "core.pager=cat", "-c", "diff.external=", "-c", "commit.gpgSign=false",
    "-c", "tag.gpgSign=false", "-c", "gpg.program=false", "-c", "core.askPass=false",
    "-c", "credential.helper=", "-c", "protocol.allow=never", "-c", "submodule.recurse=false",
    "-c", "diff.submodule=short", "-c", "status.submoduleSummary=false", "-c", "gc.auto=0",
    "-c", "maintenance.auto=false", "--no-pager",
]  # fmt: skip


# No transport at all, whatever the config says: a config's ``protocol.<name>.allow`` outranks
# ``-c protocol.allow=never``, and a partial clone fetches a missing object on demand from its
# promisor remote (an ``ext::`` URL is a command). The environment variable outranks both.
NO_PROTOCOL = ""
# Variables ``--config-env`` takes a filter override's value from, for a driver whose name holds
# ``=`` (``[filter "a=b"]``), which ``-c`` cannot name: it splits at the first ``=``.
CONFIG_VALUES = {"": "KILN_GIT_EMPTY", "false": "KILN_GIT_FALSE"}


class GitFailed(KilnError):
    """One of Kiln's own git calls failed (or took longer than ``TIMEOUT``)."""


class HeadMoved(GitFailed):
    """The agent committed, reset or switched during the run: a branch made from where HEAD is
    now would carry commits the patch and the summary do not show."""

    exit_code = 5  # refused by policy (docs/ci.md)


def git_env(root: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Kiln's environment without ``GIT_*`` (a ``GIT_DIR`` or ``GIT_CONFIG_PARAMETERS`` there
    must not redirect or reconfigure Kiln's calls) and with a ``PATH`` that names no folder of
    the workspace (``host_path``): ``git`` and what it starts are the host's, never a file a
    command wrote into an activated ``.venv/bin``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    env["GIT_ALLOW_PROTOCOL"] = NO_PROTOCOL
    env.update({name: value for value, name in CONFIG_VALUES.items()})
    return host_env([root], {**env, **(extra or {})})


def _run(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    stdin: str | None = None,
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    if timeout == CONFIG_TIMEOUT and (why := git_files.waits_on(cwd)) is not None:
        raise GitFailed(f"could not read the git config of {cwd}: {why}; stopped")
    try:
        return subprocess.run(
            ["git", *SAFE_GIT, *argv], cwd=cwd, env=env, input=stdin, capture_output=True,
            text=True, encoding="utf-8", errors="surrogateescape", timeout=timeout,
            stdin=subprocess.DEVNULL if stdin is None else None,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        if timeout == CONFIG_TIMEOUT:
            raise GitFailed(
                f"could not read the git config of {cwd} within {timeout:g}s (an include "
                "naming a FIFO, a device or a slow mount?); stopped"
            ) from exc
        raise GitFailed(f"git {argv[0]} took longer than {timeout:g}s; stopped") from exc


def _unpinned(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A read-only call that finds its repository from ``repo`` (the layout at the start, and
    nested repositories, which are looked at under their own config)."""
    return _run(list(args), repo, git_env(repo), timeout=CONFIG_TIMEOUT)


@dataclass(frozen=True)
class Layout:
    """Where the repository was when the run started; ``root`` is the workspace."""

    root: Path
    top: Path
    git_dir: Path
    common_dir: Path
    head: str | None  # None: no commit yet
    refs: tuple[tuple[str, str], ...] = ()  # (name, object) of every ref
    stash: tuple[tuple[str, str], ...] = ()  # the stash's entries (``stash_log``)
    head_ref: str | None = None  # the branch HEAD named, None when detached (``git_skeleton``)

    @classmethod
    def record(cls, root: Path) -> Layout:
        root = Path(root).resolve()
        # one path per call: a folder whose name holds a new line (`ci job\n2/repo`) is
        # one answer, where three answers read by lines made five
        asked = ("--show-toplevel", "--absolute-git-dir", "--git-common-dir")
        answers = [_unpinned(root, "rev-parse", flag) for flag in asked]
        proc = next((a for a in answers if a.returncode), answers[0])
        lines = [a.stdout.removesuffix("\n") for a in answers if not a.returncode]
        if "dubious ownership" in proc.stderr:  # safe.directory: git reads no such repository
            named = re.search(r"dubious ownership in repository at '([^']+)'", proc.stderr)
            where = named.group(1) if named else str(root)
            raise UsageError(
                f"git refuses {where}: the repository is owned by another user",
                hint=f"if you trust it: git config --global --add safe.directory {where} "
                "(a checkout in a container job belongs to the runner's user)",
            )
        if proc.returncode != 0 or len(lines) != 3:
            raise UsageError(
                f"{root} is not a git checkout",
                hint="--ci needs a git working tree to diff against",
            )
        top, git_dir = Path(lines[0]).resolve(), Path(lines[1]).resolve()
        common = (root / lines[2]).resolve()
        if root != top and top not in root.parents:
            raise UsageError(
                f"the repository's work tree {top} does not hold the workspace {root}",
                hint="a core.worktree setting moved it; check out the repository afresh",
            )
        head = _unpinned(root, "rev-parse", "--verify", "-q", "HEAD^{commit}").stdout.strip()
        layout = cls(root, top, git_dir, common, head or None)
        refs = tuple(layout.current_refs().items())
        branch = _unpinned(root, "symbolic-ref", "-q", "HEAD").stdout.strip() or None
        return replace(layout, refs=refs, stash=stash_log.entries(layout), head_ref=branch)

    def current_refs(self) -> dict[str, str]:
        out = self.git("for-each-ref", "--format=%(objectname) %(refname)")
        return dict(reversed(line.split(" ", 1)) for line in out.splitlines() if " " in line)  # type: ignore[misc]

    def restore_refs(self) -> list[str]:
        """Put every ref back where the run found it; returns what was changed. A tag or branch
        the agent made or moved in the sandbox would otherwise go out with a workflow's
        ``git push --tags`` / ``--all``, though the patch and the summary never showed it."""
        made = git_skeleton.repair(self)  # without refs/ or HEAD, git knows no repository
        before, now = dict(self.refs), self.current_refs()
        changed = sorted(n for n in before.keys() | now.keys() if before.get(n) != now.get(n))
        for name in changed:
            if name in before:
                self.git("update-ref", "-m", "kiln: restored after the run", name, before[name])
            else:
                self.git("update-ref", "-d", name)
        if stash_log.restore(self, self.stash):
            changed.append("the stash list")
        return made + changed

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        pinned = {"GIT_DIR": str(self.git_dir), "GIT_COMMON_DIR": str(self.common_dir),
                  "GIT_WORK_TREE": str(self.top)}  # fmt: skip
        return git_env(self.root, {**pinned, **(extra or {})})

    def run(
        self, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return _run([*self.filter_overrides(), *args], self.root, self.env(env), stdin)

    def git(self, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
        proc = self.run(*args, env=env, stdin=stdin)
        if proc.returncode != 0:
            raise GitFailed(f"git {args[0]} failed: {proc.stderr.strip()[:500]}")
        return proc.stdout

    def filter_overrides(self) -> list[str]:
        """``-c`` options that switch off every filter driver the config defines (a driver's
        clean command runs on ``git add``), the configs of nested repositories included (git
        status and add look inside them: ``git_nested``); reading a config runs nothing."""
        configs = [_run(["config", "--null", "--name-only", "--get-regexp", r"^filter\."],
                        self.root, self.env(), timeout=CONFIG_TIMEOUT)]  # fmt: skip

        def look(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
            # a nested repository is found from its own folder; PATH is cleaned of the workspace
            env = self.env() if repo == self.top else git_env(self.root)
            return _run(list(args), repo, env, timeout=CONFIG_TIMEOUT)

        for repo in nested_repositories(self.top, look):
            configs.append(look(repo, "config", "--null", "--name-only", "--get-regexp",
                                r"^filter\."))  # fmt: skip
        drivers = {
            key.rsplit(".", 1)[0]
            for proc in configs
            for key in proc.stdout.split("\0")
            if key.count(".") >= 2
        }
        out: list[str] = []
        for driver in sorted(drivers):
            for key, value in (
                ("clean", ""),
                ("smudge", ""),
                ("process", ""),
                ("required", "false"),
            ):
                if "=" in driver:  # `-c` splits at the first `=`; `--config-env` at the last
                    out.append(f"--config-env={driver}.{key}={CONFIG_VALUES[value]}")
                else:
                    out += ["-c", f"{driver}.{key}={value}"]
        return out

    def current_head(self) -> str | None:
        proc = self.run("rev-parse", "--verify", "-q", "HEAD^{commit}")
        return proc.stdout.strip() or None

    def dirty_paths(self) -> set[str]:
        """Workspace paths that differ from the recorded ``HEAD`` (tracked changes, untracked
        files, and what commits made during the run changed), ``.kiln/`` excluded."""
        # Not inside submodules (``dirty``): git would run each one's status under its own
        # config, which the agent may write past the ones ``filter_overrides`` reads; a
        # submodule's new commit still counts, its work tree's edits are not in the patch anyway.
        out = index_flags.status(self, "--porcelain", "-z", "-uall", "--no-renames",
                                 "--ignore-submodules=dirty", "--", ".")  # fmt: skip
        top_paths = {entry[3:] for entry in out.split("\0") if len(entry) > 3}
        now = self.current_head()
        if now and now != self.head:  # commits made during the run: their files count too
            moved = (
                self.git("diff", "--name-only", "-z", "--no-renames", self.head, now, "--", ".")
                if self.head
                else self.git("ls-tree", "-r", "-z", "--name-only", "--full-tree", now, "--", ".")
            )
            top_paths |= {p for p in moved.split("\0") if p}
        prefix = self.root.relative_to(self.top).as_posix() + "/" if self.root != self.top else ""
        paths = {p[len(prefix) :] for p in top_paths if p.startswith(prefix)}
        return {p for p in paths if p != ".kiln" and not p.startswith(".kiln/")}

    def contents(self, paths: set[str]) -> dict[str, bytes]:
        """A digest of each tracked file among ``paths`` (workspace-relative): a file the user had
        changed before the run that differs later was edited in the run, by a command (``sed
        -i``) as much as by ``edit_file``. Untracked ones (build output) are left out."""
        if not paths:
            return {}
        tracked = set(self.git("ls-files", "-z", "--", ".").split("\0")) & paths
        return digests(self.root, tracked)

    def patch(self, paths: list[str], limits: Limits) -> str:
        """The diff of ``paths`` (workspace-relative) against the recorded ``HEAD``, new files
        included, with workspace-relative names; raises ``PatchTooLarge`` past ``limits``."""
        if not paths:
            return ""
        if len(paths) > limits.max_files:
            raise PatchTooLarge(
                f"the run changed {len(paths)} files; a patch holds at most {limits.max_files}"
            )
        size = sum(_size(self.root / p) for p in paths)
        if size > limits.max_bytes:
            raise PatchTooLarge(too_large(size, limits))
        with tempfile.TemporaryDirectory() as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if self.head:
                self.git("read-tree", self.head, env=env)
            self.add(paths, env=env)
            # a repository without a commit yet: against the empty tree (HEAD may exist now)
            base = self.head or self.git("hash-object", "-t", "tree", "--stdin", stdin="").strip()
            argv = ["git", *SAFE_GIT, *self.filter_overrides(), "diff", "--cached", "--binary",
                    "--no-ext-diff", "--no-textconv", "--submodule=short", "--relative", base]  # fmt: skip
            return _bounded_output(argv, self.root, self.env(env), limits)

    def add(self, paths: list[str], env: dict[str, str]) -> None:
        index_add.add(self, paths, env)

    def commit_branch(self, branch: str, message: str, author: str | None, paths: list[str]) -> str:
        """Commit ``paths`` on a new branch made from the recorded ``HEAD`` and check it out;
        returns the commit. The tree is built in a throw-away index exactly as the patch is, so
        the branch holds what the patch shows: nothing the agent staged or flagged in the real
        index (``--assume-unchanged``, ``--skip-worktree``, a blob of its choosing) gets in, and
        ``commit-tree`` runs no hook."""
        now = self.current_head()
        if now != self.head:
            raise HeadMoved(
                f"HEAD moved during the run ({_short(self.head)} -> {_short(now)}): no branch "
                "made; the patch shows every change since the run started"
            )
        if self.run("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0:
            raise HeadMoved(f"branch {branch!r} was created during the run: no commit made")
        with tempfile.TemporaryDirectory() as tmp:
            index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if self.head:
                self.git("read-tree", self.head, env=index)
            self.add(paths, env=index)
            tree = self.git("write-tree", env=index).strip()
        name, email = "Kiln", "kiln@localhost"
        who = {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
        if author:
            name, _, email = author.strip().rpartition(" <")
            email = email.rstrip(">")
        who |= {"GIT_AUTHOR_NAME": name.strip(), "GIT_AUTHOR_EMAIL": email}
        parents = ["-p", self.head] if self.head else []
        commit = self.git("commit-tree", tree, *parents, "-F", "-", env=who, stdin=message).strip()
        self.git("update-ref", "-m", "kiln: --commit-branch", f"refs/heads/{branch}", commit, "")
        # The checkout on the new branch, those paths staged as committed (as `git switch -c`
        # and `git commit -- PATHS` left it); the working tree is not touched.
        self.git("symbolic-ref", "HEAD", f"refs/heads/{branch}")
        self.git("reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", commit,
                 stdin="\0".join(index_add.literal(paths)) + "\0")  # fmt: skip
        return commit


def digests(root: Path, paths: set[str]) -> dict[str, bytes]:
    """A digest of each of ``paths`` as it is now, tracked or not: a file the index dropped
    (``git update-index --force-remove``) with its content as it was is no edit of the run's."""
    return {p: _digest(root / p) for p in paths}


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "no commit"


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size if path.is_file() and not path.is_symlink() else 0
    except OSError:
        return 0


def _digest(path: Path) -> bytes:
    try:
        if path.is_symlink():
            return b"link:" + os.fsencode(os.readlink(path))
        if not path.is_file():
            return b""
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").digest()
    except OSError:
        return b""


def _bounded_output(argv: list[str], cwd: Path, env: dict[str, str], limits: Limits) -> str:
    """stdout of ``argv``, read in pieces and stopped once it passes ``limits.max_bytes``."""
    with tempfile.TemporaryFile() as err:  # a pipe for stderr could fill while stdout is read
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=err,
                                stdin=subprocess.DEVNULL)  # fmt: skip
        assert proc.stdout is not None
        chunks: list[bytes] = []
        total = 0
        try:
            while piece := proc.stdout.read(1 << 20):
                total += len(piece)
                if total > limits.max_bytes:
                    raise PatchTooLarge(too_large(total, limits))
                chunks.append(piece)
            if proc.wait(timeout=TIMEOUT) != 0:
                err.seek(0)
                message = err.read().decode(errors="replace").strip()[:500]
                raise GitFailed(f"git diff failed: {message}")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
    return b"".join(chunks).decode("utf-8", errors="surrogateescape")  # bytes kept as they are
