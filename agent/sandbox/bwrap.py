"""The Linux backend: a bubblewrap (``bwrap``) command line around the command.

The whole filesystem is mounted read-only; the workspace and a private temp folder (at ``/tmp``)
are bound writable; secret paths are covered (a folder by an empty tmpfs, a file by
``/dev/null``); repository config that makes git or Kiln run code on their own (``.git/config``,
``.git/hooks``, ``.git/info``, ``.kiln/``) stays read-only inside the workspace. The command gets
fresh PID, IPC, UTS and (unless granted) network namespaces, so it cannot signal host processes,
reach the host's abstract sockets or open any connection, and no capability (not even when Kiln
runs as root), so it cannot unmount or remount what covers the host; ``--die-with-parent`` and the PID
namespace end every process it started when it ends (and when it is killed as it starts, the
namespace's pid 1 is killed too: ``agent.sandbox.pid_one``).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from agent.sandbox.git_credentials import head
from agent.write_policy import AUTORUN_FILES, PIPELINE_PATHS, SHELL_HOOK_FILES

# Local daemons a command could drive to escape (a Docker socket is root on the host; so are
# libvirt's, LXD's and Incus's to their groups; snapd installs and runs snaps). The user's own
# (rootless Podman/Docker, the session bus) live in the runtime folder, hidden by the policy.
DAEMON_SOCKETS = (
    "/run/docker.sock", "/var/run/docker.sock", "/run/containerd/containerd.sock",
    "/run/podman/podman.sock", "/run/libvirt/libvirt-sock", "/var/run/libvirt/libvirt-sock",
    "/var/snap/lxd/common/lxd/unix.socket", "/var/lib/lxd/unix.socket",
    "/var/lib/incus/unix.socket", "/run/crio/crio.sock", "/run/k3s/containerd/containerd.sock",
    "/run/buildkit/buildkitd.sock", "/run/snapd.socket", "/run/snapd-snap.socket",
)  # fmt: skip
PROTECTED_IN_WORKSPACE = (
    ".git/config", ".git/hooks", ".git/info", ".kiln", ".claude", ".agents", "KILN.md",
    "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", *SHELL_HOOK_FILES, *AUTORUN_FILES, *PIPELINE_PATHS,
)  # fmt: skip
# In each submodule's git folder (``.git/modules/NAME``, nested ones too): what makes the
# user's next ``git status`` in the superproject (which runs git inside populated submodules)
# run a program: its config, hooks and a ``commondir`` pointing at another config.
MODULE_PROTECTED = ("config", "config.worktree", "hooks", "info", "commondir")
MAX_MODULES = 200


def build_argv(
    bwrap: str,
    argv: list[str],
    *,
    root: Path,
    cwd: Path,
    tmp: Path,
    writable: list[Path],
    hidden: list[Path],
    readable: list[Path],
    network: bool,
    readonly: list[Path] = (),  # type: ignore[assignment]
    substitutes: dict[Path, Path] | None = None,
) -> list[str]:
    """``substitutes`` maps a file to the host file bound (read-only) in its place."""
    args = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        # The kernel's keyrings are per user namespace: run by root, bwrap makes none, and a
        # command read the keys of root's user keyring (a Kerberos ticket of a KEYRING: cache,
        # a token put there with keyctl). Unprivileged, bwrap always makes one.
        "--unshare-user-try",
        # No capability inside: run by root (CI containers), bwrap otherwise hands the command
        # every capability, and CAP_SYS_ADMIN undoes the mounts below (``umount ~/.ssh``,
        # ``mount -o remount,rw /``). With no_new_privs, no exec gives them back.
        "--cap-drop",
        "ALL",
    ]
    if not network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    args += ["--bind", str(tmp), "/tmp"]
    args += ["--bind", str(root), str(root)]
    for path in writable:
        if path.exists():
            args += ["--bind", str(path), str(path)]
    if not network:  # a resolver's socket (nscd, systemd-resolved) is DNS by another door
        for sock in run_sockets():
            args += ["--ro-bind", "/dev/null", str(sock)]
    covers = [
        c for path in [*hidden, *(Path(s) for s in DAEMON_SOCKETS)] for c in _covers(path, root)
    ]
    protected = [root / rel for rel in PROTECTED_IN_WORKSPACE] + list(readonly)
    protected += submodule_config(root)
    if (root / ".git").is_file() and not (root / ".git").is_symlink():
        protected.append(root / ".git")  # a worktree's "gitdir:" file names where hooks live
    protected = [p for p in protected if p.exists() and not p.is_symlink()]
    protected = [q for q in (_unlinked(p, root) for p in protected) if q is not None]
    # what a cover hides stays hidden: bound read-only after it, a file that both a Read and a
    # Write deny rule name was the host's again, readable
    hid = {c for c, _ in covers}
    protected = [p for p in protected if hid.isdisjoint((p, *p.parents))]
    # Pinned first: a folder bound again after a cover (``.vscode``, pinned for its settings)
    # brought back the host's file under it (a hidden ``.vscode/sftp.json`` was readable), and a
    # hidden path's own folders pinned cannot be renamed away from under the cover either.
    for folder in pinned_parents(root, [*protected, *(c for c, _ in covers)]):
        args += ["--bind", str(folder), str(folder)]
    for target, how in covers:
        args += [*how, str(target)]
    for path in readable:  # given back read-only inside a hidden folder (user skills)
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    for path in protected:
        args += ["--ro-bind", str(path), str(path)]
    for path, source in (substitutes or {}).items():  # last, so it covers a binding above
        if path.is_file() and not path.is_symlink():
            args += ["--ro-bind", str(source), str(path)]
    args += ["--setenv", "TMPDIR", "/tmp", "--chdir", str(cwd), "--", *argv]
    return args


# What bwrap prints when it stops before starting the command because a path it was to mount
# on (or from) is not there: "Can't create file at /run/docker.sock: Read-only file system".
SETUP_FAILED = re.compile(r"bwrap: Can't (?:create file at|mkdir|find source path) (/.*): [^:\n]*")


def went_away(argv: list[str], output: bytes | str) -> bool:
    """Whether bwrap stopped before the command started because a path ``argv`` mounts went away
    after ``argv`` was built (a daemon removed its socket under ``/run``, git replaced
    ``.git/hooks``): built again, the arguments leave it out. Only when that line is the whole
    output and the path it names is one ``argv`` mounts and is gone now: a command that prints
    the same line did run, and is not started twice for it."""
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else output
    match = SETUP_FAILED.fullmatch(text.strip())
    if match is None or "--" not in argv:
        return False
    path = match[1]
    return path in argv[: argv.index("--")] and not os.path.lexists(path)


RUN_FOLDERS = (Path("/run"),)  # /var/run is a link to /run on every current distribution
MAX_RUN_ENTRIES = 5000


def run_sockets(folders: tuple[Path, ...] = RUN_FOLDERS) -> list[Path]:
    """Unix sockets under ``/run`` (bounded walk, no link followed). A socket on the filesystem
    is reachable from any network namespace: nscd's and systemd-resolved's resolve any name for
    whoever asks (a DNS query carries data out), a database or a mail daemon acts for them."""
    found: list[Path] = []
    todo, seen = [f for f in folders if f.is_dir() and not f.is_symlink()], 0
    while todo and seen < MAX_RUN_ENTRIES:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(Path(entry.path))
                elif stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    found.append(Path(entry.path))
            except OSError:
                continue
    return found


def submodule_config(root: Path) -> list[Path]:
    """``MODULE_PROTECTED`` paths of every git folder under ``.git/modules`` and
    ``.git/worktrees`` (a linked worktree's folder: its ``commondir`` names the config and hooks
    git uses in that worktree), and of a git folder inside the workspace that a ``.git`` file
    names, with its common dir (bounded)."""
    out: list[Path] = []
    todo, seen = [root / ".git" / "modules", root / ".git" / "worktrees"], 0
    todo += named_git_dirs(root)
    while todo and seen < MAX_MODULES:
        folder = todo.pop()
        if folder.is_symlink() or not folder.is_dir():
            continue
        seen += 1
        if (folder / "HEAD").is_file():  # a git folder: protect it, then look at its modules
            out += [folder / name for name in MODULE_PROTECTED]
            todo.append(folder / "modules")
            continue
        try:  # a module name with a slash ("libs/a") is a plain folder on the way
            todo += [child for child in folder.iterdir() if child.is_dir()]
        except OSError:
            continue
    return out


def named_git_dirs(root: Path) -> list[Path]:
    """The git folder a ``.git`` file at the workspace root names (``gitdir: …``, as
    ``git init --separate-git-dir`` writes it) and its common dir, when inside the workspace;
    otherwise they are read-only like the rest of the host."""
    gitdir = pointed_git_dir(root / ".git")
    if gitdir is None:
        return []
    try:
        found = [gitdir]
        common = gitdir / "commondir"
        if common.is_file() and not common.is_symlink():
            found.append((gitdir / head(common)).resolve())
    except OSError:
        return []
    inside = [d for d in found if root in d.parents]
    return [*inside, *(d / "worktrees" for d in inside), *(d / "modules" for d in inside)]


def pointed_git_dir(dotgit: Path) -> Path | None:
    """The git folder a ``.git`` file names (``gitdir: …``, resolved from the file's folder), or
    None when ``dotgit`` is no such file."""
    if dotgit.is_symlink() or not dotgit.is_file():
        return None
    try:
        line = head(dotgit)
        if not line.startswith("gitdir:"):
            return None
        return (dotgit.parent / line[len("gitdir:") :].strip()).resolve()
    except (OSError, RuntimeError):
        return None


def _unlinked(path: Path, root: Path) -> Path | None:
    """``path`` where a mount can be made on it: bwrap resolves a link on the way inside the new
    root, where a link naming an absolute path (``.git -> /srv/git/proj.git``) leads nowhere and
    every command failed to start ("Can't bind mount … No such file or directory"). So below a
    link, the path it leads to when that is inside the workspace; None when outside (read-only
    like the rest of the host)."""
    rel = path.relative_to(root) if root in path.parents else None
    if rel is None or not any(
        (root / rel.parents[i]).is_symlink() for i in range(len(rel.parts) - 1)
    ):
        return path
    real = path.resolve()
    return real if root.resolve() in real.parents else None


def pinned_parents(root: Path, protected: list[Path]) -> list[Path]:
    """The folders between the workspace and each protected path, outermost first. Bound onto
    themselves they become mount points, which cannot be renamed or removed: otherwise
    ``mv .git x && cp -r x .git`` would swap a writable copy in under the read-only hooks."""
    folders: set[Path] = set()
    for path in protected:
        if root not in path.parents:
            continue
        for parent in path.parents:
            if parent == root:
                break
            folders.add(parent)
    return sorted(folders, key=lambda f: len(f.parts))


def _covers(path: Path, root: Path) -> list[tuple[Path, list[str]]]:
    """Where to cover ``path`` (and what with): where it leads, and the name itself when no link
    is above it. Never a folder that holds the workspace: a hidden entry that is or passes
    through a link to ``..`` covered the workspace, and every command ran in an empty folder
    whose writes were lost."""
    if not path.exists() and not path.is_symlink():
        return []
    real = path.resolve()
    if real == root or real in root.parents or path == root or path in root.parents:
        return []  # never cover the workspace itself
    out: list[tuple[Path, list[str]]] = []
    targets = {real}
    # bwrap cannot make a mount point under a link, nor on one that names an absolute path
    # (/var/run -> /run: /var/run/docker.sock is /run/docker.sock; a hidden `.env` linking to
    # /srv/app/.env stopped every command with "Can't create file at …/.env")
    if path.parent.resolve() == path.parent and not path.is_symlink():
        targets.add(path)
    for target in sorted(targets):
        if target.is_dir():
            out.append((target, ["--tmpfs"]))
        elif target.exists():
            out.append((target, ["--ro-bind", "/dev/null"]))
    return out
