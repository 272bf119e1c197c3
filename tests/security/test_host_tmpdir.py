"""Commands get a temp folder of their own at `/tmp`, so the host's temp files and the sockets
programs leave there (an editor's git askpass, which answers with the user's credentials; an
ssh agent) are out of reach. Where `TMPDIR` moves the host's temp folder elsewhere, a command
read its files and connected to its sockets. Through the real `kiln run --mode ci`: that
folder is hidden too (docs/security.md section 4)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import one_command

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

CANARY = "host-tmpdir-canary-90ac"
PROBE = """
import pathlib, socket, sys
folder = pathlib.Path(sys.argv[1])
print("seen", sorted(p.name for p in folder.glob("*")))
for p in folder.glob("*.txt"):
    print(p.read_text())
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(str(folder / "askpass.sock"))
    print("CONNECTED")
except OSError as exc:
    print("refused", exc.errno)
"""


def test_the_hosts_temp_folder_named_by_tmpdir_is_hidden(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    hosttmp = host_dir / "tmp"
    hosttmp.mkdir()
    (hosttmp / "note.txt").write_text(CANARY)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(hosttmp / "askpass.sock"))
    listener.listen(1)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "probe.py").write_text(PROBE)
    try:
        _, results = one_command(
            root, f"python3 probe.py {hosttmp}", home=tmp_path, kiln_home=kiln_home,
            script=tmp_path / "script.json", env={"TMPDIR": str(hosttmp)},
        )  # fmt: skip
    finally:
        listener.close()
    assert "seen []" in results, results  # the command ran, and found the folder empty
    assert CANARY not in results and "CONNECTED" not in results, results
