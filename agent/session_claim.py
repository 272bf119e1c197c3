"""One writer per session: a turn holds the session, and starts only from what is stored.

Two `kiln run --resume S` at once (or an editor and a terminal on the same session) would
otherwise append two trajectories into one, each numbering its messages from what it loaded:
one dies on the store's unique key halfway through, the other leaves the session with a user
message that was never answered. A turn therefore takes an exclusive ``flock`` on a file in the
session's folder (released when the turn ends, or by the kernel when the process dies), and
refuses to start when the store holds messages this copy has not seen.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from agent.errors import SessionBusy
from agent.session_store import SessionStore
from agent.transcript import Transcript

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the freshness check still holds
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".turn.lock"


@contextmanager
def turn_claim(store: SessionStore, transcript: Transcript) -> Iterator[None]:
    """Hold ``transcript``'s session for one turn; ``SessionBusy`` if it is in use or stale."""
    session_id = transcript.session_id
    fd = os.open(
        store.folder(session_id) / LOCK_FILE,
        os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
        0o600,
    )
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise SessionBusy(
                    f"session {session_id} is running a turn in another Kiln process",
                    hint="wait for it to finish, or start a new session",
                ) from None
        if behind(store, transcript):
            raise SessionBusy(
                f"session {session_id} changed in another Kiln process since it was loaded",
                hint=f"resume it again (kiln run --resume {session_id}) to continue from there",
            )
        yield
    finally:
        os.close(fd)


def behind(store: SessionStore, transcript: Transcript) -> bool:
    """Whether the store holds messages (or a compaction) this copy of the session has not seen."""
    epoch, count = store.position(transcript.session_id)
    return (epoch, count) != (transcript.epoch, len(transcript.messages))


def turn_running(store: SessionStore, session_id: str) -> bool:
    """Whether a live process holds the session for a turn now (the stored ``status`` says only
    how the last turn ended; a killed process's claim went with it)."""
    if fcntl is None:  # pragma: no cover - Windows
        return False
    path = store.path.parent / "sessions" / session_id / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # no turn has run, or the folder is gone
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
