"""For tests that stop a `kiln` child with SIGINT, as Ctrl-C in a terminal does.

A shell without job control starts background commands with SIGINT ignored, and a child
inherits that (and a blocked signal mask) through exec: a suite started that way (`cmd &` in
a script) saw every Ctrl-C test time out. ``preexec_fn=as_from_a_terminal`` gives the child
the disposition a terminal gives it, whatever the runner's."""

from __future__ import annotations

import signal


def as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
