"""The first process of a command's bubblewrap sandbox, killed with the command.

Kiln ends a command by killing its process group, bwrap's. bwrap's child, pid 1 of the command's
PID namespace, leaves that group (``--new-session`` calls setsid) a moment before it sets its
parent-death signal (``--die-with-parent``, set in pid 1 only after its fork of the command): a
kill that landed in between left it and the command running on, orphaned (about 1 kill in 20 in
bwrap's first 20 ms). bwrap writes that child's pid to ``--info-fd`` before it lets the child go
on, so right after the group is killed the pid is there whenever the child could have left the
group; killing it ends the namespace and every process in it.
"""

from __future__ import annotations

import os
import re
import select
import signal
import sys
from typing import Any

CHILD_PID = re.compile(rb'"child-pid":\s*(\d+)')  # in one write: whole or absent, never cut
GONE_SECONDS = 5  # a namespace killed is gone in milliseconds; this bounds a stuck one


class PidOne:
    """Made before a command starts: start ``argv`` with ``pass_fds``, call ``started()`` once the
    spawn returned (or failed), ``kill()`` right after killing the command's process group, and
    ``close()`` in the end. Without a bubblewrap sandbox, ``argv`` as given and nothing to do."""

    def __init__(self, argv: list[str], *, bwrap: bool) -> None:
        self.argv = list(argv)
        self.pass_fds: tuple[int, ...] = ()
        self._read = self._write = -1
        self._report = b""  # what bwrap wrote so far (kill may come more than once)
        if bwrap:
            self._read, self._write = os.pipe()
            os.set_blocking(self._read, False)
            self.argv = [argv[0], "--info-fd", str(self._write), *argv[1:]]
            self.pass_fds = (self._write,)

    @classmethod
    def of(cls, argv: list[str], sandbox: Any) -> PidOne:
        """For ``argv`` from ``sandbox.wrap``/``shell`` (None: unconfined)."""
        backend = getattr(sandbox, "backend", None)
        return cls(argv, bwrap=backend is not None and backend[0] == "bwrap")

    def started(self) -> None:
        """The spawn is over: bwrap holds the report's end now, Kiln keeps only the reading end."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1

    def kill(self) -> None:
        """Kill the namespace's pid 1 when bwrap reported it, and wait (bounded) until it and so
        every process of the namespace are gone. Once the group is killed, a pid 1 that left it
        has been reported: bwrap writes the pid before it lets pid 1 go on to its setsid."""
        pid = self._reported()
        if pid is not None:
            _kill_pid_one(pid)

    def close(self) -> None:
        self.started()
        if self._read >= 0:
            os.close(self._read)
            self._read = -1

    def _reported(self) -> int | None:
        while self._read >= 0 and len(self._report) < 1 << 16:
            try:
                piece = os.read(self._read, 4096)
            except BlockingIOError:
                break
            if not piece:
                break
            self._report += piece
        match = CHILD_PID.search(self._report)
        return int(match[1]) if match else None


def _kill_pid_one(pid: int) -> None:
    if sys.platform != "linux":  # bubblewrap's only platform
        return
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # gone already (killed with the group, or its namespace ended)
    except OSError:
        pidfd = -1  # no pidfd (Linux before 5.3): by pid, after the same check
    try:
        if not _namespace_init(pid):
            return  # its pid was taken by another process meanwhile: not ours to kill
        if pidfd < 0:
            os.kill(pid, signal.SIGKILL)
            return
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        # pid 1 exits only after every other process of its namespace is gone
        waiting = select.poll()
        waiting.register(pidfd, select.POLLIN)
        waiting.poll(GONE_SECONDS * 1000)
    except OSError:
        pass
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _namespace_init(pid: int) -> bool:
    """Whether ``pid`` is pid 1 of a PID namespace below Kiln's (``NSpid:  <pid> … 1``)."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    ids = line.split()[1:]
                    return len(ids) >= 2 and ids[-1] == "1"
    except OSError:
        return False
    return False
