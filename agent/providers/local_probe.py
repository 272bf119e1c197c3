"""Whether this machine's llama-cpp-python can evaluate a prompt, asked once in a child process.

``pip install`` compiles llama-cpp-python for the CPU it builds on (``GGML_NATIVE``). On some
virtual CPUs such a build crashes with SIGSEGV in ``llama_decode`` on the first prompt, and the
embedded model runs in Kiln's own process: ``kiln lsp`` died under the editor, ``kiln run`` with
no word but the shell's "Segmentation fault". Before the first load in a process, a child loads
the model and evaluates a few tokens; a child killed by a signal is one line naming the fix
(a portable rebuild), and the parent never loads that build. A build that passed is noted under
``$KILN_HOME/cache/local-probe`` (keyed by the library's files and the model file), so the check
costs about a second once per installation and model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from agent.errors import ProviderUnavailable
from agent.providers.install import PORTABLE
from agent.session_store import kiln_home

log = logging.getLogger("kiln.providers")

# A load and a few tokens take about a second; past this the check gives up, and the load in
# the process goes ahead unchecked.
PROBE_TIMEOUT = 120.0
REBUILD = (
    f'{PORTABLE}pip install --force-reinstall --no-cache-dir --no-deps "llama-cpp-python>=0.3,<0.4"'
)

# Load the model with a small window and evaluate a few tokens: the step that crashed.
PROBE = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=128, n_threads=1, n_threads_batch=1, verbose=False)
llm.eval(llm.tokenize(b"def add(a, b):"))
"""


def check_runs(model_path: Path) -> None:
    """Raise ProviderUnavailable when a child evaluating a prompt with this llama-cpp-python
    build dies by a signal. Any other failure (a file llama.cpp cannot read, a timeout) is left to
    the load in this process, which reports it as it always has."""
    marker = _marker(model_path)
    if marker is not None and marker.exists():
        return
    try:
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, str(model_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("the llama-cpp-python check did not finish: %s", exc)
        return
    if proc.returncode < 0:
        name = _signal_name(-proc.returncode)
        raise ProviderUnavailable(
            f"local: llama-cpp-python crashed ({name}) evaluating a prompt: its build does "
            "not run on this CPU (a native build made elsewhere or for a virtual CPU)",
            hint=f"rebuild it portable: {REBUILD}",
        )
    if proc.returncode != 0:
        log.debug(
            "the llama-cpp-python check failed: %s", proc.stderr[-2000:].decode(errors="replace")
        )
    elif marker is not None:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(str(model_path) + "\n")
        except OSError as exc:  # a read-only home: checked again next time
            log.debug("cannot note the llama-cpp-python check: %s", exc)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _marker(model_path: Path) -> Path | None:
    """Where a passed check of this build with this model file is noted (None: the library
    cannot be found, so nothing identifies the build)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.origin:
        return None
    package = Path(spec.origin).parent
    parts = [str(package)]
    for path in sorted(package.rglob("*.so*")) or [Path(spec.origin)]:
        parts.append(_stamp(path))
    parts.append(_stamp(model_path))
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]
    return kiln_home() / "cache" / "local-probe" / digest


def _stamp(path: Path) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} missing"
    return f"{path} {st.st_size} {st.st_mtime_ns}"
