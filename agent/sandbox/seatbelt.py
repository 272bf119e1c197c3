"""The macOS backend: a ``sandbox-exec`` (Seatbelt) profile equivalent to the bubblewrap one.

Everything may be read except the hidden paths; writes only to the workspace, the private temp
folder and the terminal devices, never to the protected repository config; no network unless
granted (local Unix sockets stay usable for the command's own children).
"""

from __future__ import annotations

from pathlib import Path

from agent.sandbox.bwrap import (
    DAEMON_SOCKETS,
    PROTECTED_IN_WORKSPACE,
    pinned_parents,
    submodule_config,
)

SANDBOX_EXEC = "/usr/bin/sandbox-exec"


def _quote(path: Path | str) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def profile(
    *,
    root: Path,
    tmp: Path,
    writable: list[Path],
    hidden: list[Path],
    readable: list[Path],
    network: bool,
    readonly: list[Path] = (),  # type: ignore[assignment]
) -> str:
    lines = ["(version 1)", "(allow default)", "(deny file-write*)"]
    allowed = [root, tmp, *writable]
    lines.append(
        "(allow file-write* "
        + " ".join(f"(subpath {_quote(p)})" for p in allowed)
        + ' (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))'
    )
    protected = [root / rel for rel in PROTECTED_IN_WORKSPACE] + submodule_config(root)
    protected += list(readonly)
    lines.append("(deny file-write* " + " ".join(f"(subpath {_quote(p)})" for p in protected) + ")")
    # The folders above protected paths (and a worktree's .git file) may not be renamed away.
    pinned = pinned_parents(root, [p for p in protected if p.exists()])
    if (root / ".git").is_file():
        pinned.append(root / ".git")
    if pinned:
        lines.append(
            "(deny file-write* " + " ".join(f"(literal {_quote(p)})" for p in pinned) + ")"
        )
    secret = [*hidden, *(Path(s) for s in DAEMON_SOCKETS)]
    lines.append(
        "(deny file-read* file-write* " + " ".join(f"(subpath {_quote(p)})" for p in secret) + ")"
    )
    if readable:
        lines.append(
            "(allow file-read* " + " ".join(f"(subpath {_quote(p)})" for p in readable) + ")"
        )
    if not network:
        lines.append("(deny network*)")
        lines.append('(allow network* (remote unix-socket (path-regex #"^/private/tmp/")))')
    # Connecting to a Unix socket is a network operation to Seatbelt, not a read: the hidden
    # paths (the ssh agent launchd puts under /private/tmp, the runtime folder, daemon sockets)
    # are refused as sockets too, last, so no allow above wins, with the network granted or not.
    lines.append(
        "(deny network* "
        + " ".join(f"(remote unix-socket (path-regex {_prefix_regex(p)}))" for p in secret)
        + ")"
    )
    return "\n".join(lines) + "\n"


def _prefix_regex(path: Path) -> str:
    """A Seatbelt regex for ``path`` and everything under it (``/tmp`` spelled both ways)."""
    text = str(path)
    if text.startswith("/tmp/"):
        text = "/private" + text
    escaped = "".join("\\" + c if c in ".^$*+?()[]{}|\\" else c for c in text)
    return '#"^' + escaped.replace('"', '\\"') + '(/|$)"'


def build_argv(argv: list[str], **kwargs: object) -> list[str]:
    return [SANDBOX_EXEC, "-p", profile(**kwargs), *argv]  # type: ignore[arg-type]
