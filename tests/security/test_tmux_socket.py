"""tmux's server runs on the host and runs whatever a client asks (`tmux run-shell CMD`), and a
Unix socket is reachable from any network namespace. The sandbox's own `/tmp` hid tmux's default
folder, but `TMUX_TMPDIR` moves it (and `TMUX` names the socket of the server Kiln runs in):
there a `kiln run --mode ci` command ran `tmux run-shell 'touch …'` and the file appeared on the
host, outside the sandbox. Both are hidden now (docs/security.md section 4)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import one_command

pytestmark = [
    pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]


@pytest.fixture
def server(host_dir: Path) -> Iterator[Path]:
    """A tmux server of the user's whose folder ``TMUX_TMPDIR`` moved out of /tmp: its socket."""
    folder = host_dir / "tmux"
    folder.mkdir()
    env = {**os.environ, "TMUX_TMPDIR": str(folder)}
    env.pop("TMUX", None)
    subprocess.run(["tmux", "new-session", "-d", "-s", "kiln-probe", "sleep 300"],
                   env=env, check=True, timeout=20)  # fmt: skip
    yield folder / f"tmux-{os.getuid()}" / "default"
    subprocess.run(["tmux", "kill-server"], env=env, timeout=20, check=False)


@pytest.mark.parametrize("names", ["TMUX", "TMUX_TMPDIR"])
def test_a_command_cannot_drive_the_users_tmux_server(
    tmp_path: Path, kiln_home: Path, host_dir: Path, server: Path, names: str
) -> None:
    marker = host_dir / "ran-on-the-host"
    root = tmp_path / "proj"
    root.mkdir()
    (root / "go.sh").write_text(
        f"tmux -S {server} run-shell 'touch {marker}'; echo asked\n"
        if names == "TMUX"
        else f"tmux run-shell 'touch {marker}'; echo asked\n"
    )
    env = (
        {"TMUX": f"{server},1,0", "TMUX_TMPDIR": "/tmp"}
        if names == "TMUX"
        else {"TMUX_TMPDIR": str(server.parent.parent), "TMUX": ""}
    )
    proc, results = one_command(
        root,
        "sh go.sh",
        home=tmp_path,
        kiln_home=kiln_home,
        script=tmp_path / "script.json",
        env=env,
    )
    assert "asked" in results, results  # the command ran
    assert not marker.exists(), results
