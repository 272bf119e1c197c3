"""GNU screen's, Neovim's and Emacs's servers run on the host and run what a client asks
(`screen -X exec`, `nvim --server S --remote-send`, `emacsclient --eval`), and a Unix socket is
reachable from any network namespace. With the network granted, the sockets under `/run` are left
as they are (only the known daemons' are covered), so `/run/screen` stayed reachable, and so did
the sockets `SCREENDIR`, `NVIM`, `NVIM_LISTEN_ADDRESS` and `EMACS_SOCKET_NAME` name anywhere. Each
is hidden now (docs/security.md section 4): a real listening socket at such a path, and a command
of `kiln run --mode ci` with the network granted cannot connect to it."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

CONNECT = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("CONNECTED")
except OSError as exc:
    print("refused", exc.__class__.__name__)
"""


def _listener(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(8)
    srv.setblocking(False)
    return srv


def _connect(tmp_path: Path, kiln_home: Path, sock: Path, env: dict[str, str]) -> str:
    """What a command, with the network granted, printed trying to connect to ``sock``."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "connect.py").write_text(CONNECT)
    (kiln_home / "settings.json").write_text(json.dumps({"sandbox": {"network": True}}))
    script = tmp_path / "script.json"
    call = {"name": "run_command", "input": {"command": f"python3 connect.py {sock}"}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "done"]))
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci", output="stream-json",
        env=env,
    )  # fmt: skip
    return " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))


@pytest.mark.parametrize("name", ["SCREENDIR", "NVIM", "NVIM_LISTEN_ADDRESS", "EMACS_SOCKET_NAME"])
def test_a_command_cannot_reach_a_server_the_environment_names(
    tmp_path: Path, kiln_home: Path, host_dir: Path, name: str
) -> None:
    if name == "SCREENDIR":  # screen's folder: a socket per session in it
        sock, value = host_dir / "screens" / "123.pts-0.host", str(host_dir / "screens")
    else:
        sock = host_dir / name.lower() / "server"
        value = str(sock)
    srv = _listener(sock)
    try:
        results = _connect(tmp_path, kiln_home, sock, {name: value})
        assert "refused" in results and "CONNECTED" not in results, results
    finally:
        srv.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="creates screen's folder under /run")
def test_a_command_cannot_reach_screens_default_folder(tmp_path: Path, kiln_home: Path) -> None:
    folder = Path("/run/screen")
    if folder.exists():
        pytest.skip("screen's folder exists here")
    sock = folder / f"S-{os.getuid()}" / "123.pts-0.host"
    srv = _listener(sock)
    try:
        results = _connect(tmp_path, kiln_home, sock, {"SCREENDIR": ""})
        assert "refused" in results and "CONNECTED" not in results, results
    finally:
        srv.close()
        shutil.rmtree(folder, ignore_errors=True)
