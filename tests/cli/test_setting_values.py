"""Every number, URL and version a user sets through the environment, given a value it cannot
take, through the real `kiln` process: one `kiln: …` line naming the setting, exit 2, never a
traceback or "internal error", and never a value past the range the docs state.

Before, `KILN_CONTEXT_WINDOW=²`, `KILN_LOCAL_MAX_TOKENS=²` and `KILN_LOCAL_THREADS=²` passed
``str.isdigit`` and crashed in ``int()``; `KILN_PARENT_POLL_SECONDS` went to a bare ``float()``
at `initialize`; `KILN_REGISTRY_DEADLINE=1e300` was an OverflowError; `OPENAI_BASE_URL=http://[::1`
a ValueError; and `1e300`, `١٢` or `1_000` were taken as timeouts, windows and thread counts.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Spellings Python's float()/int() read but no setting means, and values past every range.
FULL = ("²", "١٢", "1e300", "inf", "nan", "-1", "0", "99999999999999999999999", "0x10", "1_000")
SHORT = ("²", "١٢", "1e300", "1_000")
NO_REGISTRY = "http://127.0.0.1:9"  # the discard port: refused at once, nothing listens there

RUN = ("run", "hi", "--max-steps", "1")
OPENAI = {"OPENAI_BASE_URL": f"{NO_REGISTRY}/v1"}
SCRIPTED = {"KILN_PROVIDER": "scripted"}  # KILN_SCRIPT is added per test
LOCAL = {"KILN_PROVIDER": "local"}  # KILN_LOCAL_GGUF is added per test
AZURE = {"AZURE_OPENAI_API_KEY": "k", "AZURE_OPENAI_ENDPOINT": NO_REGISTRY, "KILN_MODEL": "m"}
MIGRATE = ("registry", "migrate", "--from", "sqlite:///src.db", "--from-blobs", "file:///src",
           "--to", "sqlite:///dst.db", "--to-blobs", "file:///dst", "--signing-key", "key")  # fmt: skip

# (variable, the command that reads it, the environment that command needs, bad values)
SETTINGS = [
    ("KILN_CONTEXT_WINDOW", RUN, OPENAI, (*FULL, "1023", "10000001")),
    ("KILN_LOCAL_MAX_TOKENS", RUN, LOCAL, (*FULL, "4097")),
    ("KILN_LOCAL_THREADS", RUN, LOCAL, (*FULL, "513")),
    ("KILN_PARENT_POLL_SECONDS", ("lsp",), {}, (*FULL, "3601")),
    ("KILN_PROVIDER_TIMEOUT", RUN, OPENAI, (*SHORT, "86401")),
    ("KILN_MCP_START_TIMEOUT", RUN, SCRIPTED, SHORT),
    ("KILN_MCP_CALL_TIMEOUT", RUN, SCRIPTED, (*SHORT, "86401")),
    ("KILN_COMPACT_AT", RUN, SCRIPTED, SHORT),
    ("KILN_INDEX_BUSY_TIMEOUT", ("index", "."), {}, (*SHORT, "86401")),
    (
        "KILN_REGISTRY_DEADLINE",
        ("skills", "search", "x"),
        {"KILN_REGISTRY": NO_REGISTRY},
        (*SHORT, "86401"),
    ),
    ("KILN_ACP_PERMISSION_TIMEOUT", ("acp",), {}, SHORT),
    ("KILN_ACP_MCP_TIMEOUT", ("acp",), {}, SHORT),
    ("KILN_REGISTRY_VERSIONS_PER_SKILL", MIGRATE, {}, SHORT),
    (
        "KILN_REGISTRY_SIGNING_KEY_FILE",
        ("registry", "key", "--new", "--data", "d"),
        {},
        (" ", "\t"),
    ),
    (
        "KILN_CI",
        ("skills", "install", "acme/notes"),
        {"KILN_REGISTRY": NO_REGISTRY},
        ("y", "²", "2"),
    ),
    ("KILN_DEBUG", RUN, SCRIPTED, ("y", "2", "debug", "²")),  # `KILN_DEBUG=0` meant on
    ("OPENAI_BASE_URL", RUN, {}, ("http://", "http://[::1", "http://h:99999/v1", "http://h:0")),
    (
        "ANTHROPIC_BASE_URL",
        RUN,
        {"KILN_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": "k"},
        ("http://[::1", "http://"),
    ),
    ("OPENAI_API_VERSION", RUN, AZURE, ("²", "a b", "2024-10-21&x=1")),
]
CASES = [
    pytest.param(name, value, args, env, id=f"{name}={value}")
    for name, args, env, values in SETTINGS
    for value in values
]


@pytest.mark.parametrize(("name", "value", "args", "env"), CASES)
def test_a_setting_that_cannot_be_taken_is_one_line_and_exit_2(
    tmp_path: Path, name: str, value: str, args: tuple[str, ...], env: dict[str, str]
) -> None:
    if env.get("KILN_PROVIDER") == "local" and importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("the local extra (llama-cpp-python) is not installed")
    script = tmp_path / "steps.json"
    script.write_text('["done"]')
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")  # the settings are read before a model loads
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KILN_", "OPENAI_", "ANTHROPIC_", "AZURE_"))
    }
    base.update(KILN_HOME=str(tmp_path / "home"), KILN_SCRIPT=str(script),
                KILN_LOCAL_GGUF=str(model), **env, **{name: value})  # fmt: skip
    workspace = tmp_path / "ws"  # outside KILN_HOME
    workspace.mkdir()
    (workspace / "key").write_text("not a key")  # `migrate --signing-key`, read after the quotas
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=workspace,
        env=base,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("kiln: ") and name in lines[0], proc.stderr
    assert "internal error" not in lines[0], proc.stderr
    assert proc.stdout == "", proc.stdout
    assert [p.name for p in workspace.iterdir()] == ["key"]  # nothing made: no db, no key file


def _kiln(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KILN_", "SUDO_"))}
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=workspace,
        env={**base, "KILN_HOME": str(tmp_path / "home"), **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_tcp_port_in_other_digits_is_one_line(tmp_path: Path) -> None:
    """`--tcp 127.0.0.1:²` passed ``isdigit`` and was an internal error in ``int()``."""
    for port in ("²", "١٢"):
        proc = _kiln(tmp_path, "lsp", "--tcp", f"127.0.0.1:{port}")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            f"kiln: --tcp expects HOST:PORT, got '127.0.0.1:{port}' (e.g. --tcp 127.0.0.1:2087)"
        ]


def test_an_empty_log_level_is_the_default(tmp_path: Path) -> None:
    """`KILN_LOG_LEVEL=` (set, empty: what an editor's settings leave) was "bad KILN_LOG_LEVEL
    ''", while every other empty variable is the default."""
    proc = _kiln(tmp_path, "acp", KILN_LOG_LEVEL="")
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="read as root only")
def test_a_sudo_uid_in_other_digits_is_no_owner(tmp_path: Path) -> None:
    """Run as root, `SUDO_UID=²` passed ``isdigit`` and every command that checks a repository's
    owner was an internal error in ``int()``."""
    subprocess.run(["git", "init", "-q", str(tmp_path / "ws")], check=True)  # its owner is read
    proc = _kiln(tmp_path, "index", ".", SUDO_UID="²")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("indexed "), proc.stdout
