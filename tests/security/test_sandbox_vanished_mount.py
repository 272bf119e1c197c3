"""A path the sandbox covers can go away between building bwrap's arguments and bwrap's start: a
daemon removes its socket under /run, a hidden file is deleted. bwrap then cannot make the mount
point on the read-only root and stops before the command runs ("Can't create file at …"); a
fresh-clone CI run failed an MCP server's start so when another test removed /run/docker.sock.
Kiln builds the arguments again and starts it once more. Through the real `kiln run` and the real
bwrap, behind a stand-in (``KILN_BWRAP``) that removes the path just before the first start, as
the daemon would; a command that prints bwrap's line itself is not run again."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import uuid
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import committing_repo
from tests.security.scripted_run import kiln_run, kiln_run_json, tool_results
from tests.skills.marketplace import market, run_with_wire, sidecar, skill_folder, step

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

MARK = "kiln-vanish-mark"
# Removes VANISH (once: while ARMED exists) when it starts a command line naming MARK, then
# runs the real bwrap; counts those starts.
STAND_IN = """#!/bin/sh
case "$*" in *{mark}*)
  echo start >> {count}
  if [ -e {armed} ]; then rm -f {armed} {vanish}; fi;;
esac
exec {bwrap} "$@"
"""


def _stand_in(tmp_path: Path, vanish: Path, mark: str = MARK) -> tuple[dict[str, str], Path]:
    """``KILN_BWRAP`` for the stand-in, and the file it counts starts in."""
    count, armed = tmp_path / "starts", tmp_path / "armed"
    armed.touch()
    script = tmp_path / "bwrap"
    bwrap = shutil.which("bwrap")
    script.write_text(
        STAND_IN.format(mark=mark, count=count, armed=armed, vanish=vanish, bwrap=bwrap)
    )
    script.chmod(0o755)
    return {"KILN_BWRAP": str(script)}, count


def _hidden_file(kiln_home: Path, host_dir: Path) -> Path:
    """A file the user's settings hide, outside /tmp (the sandbox's /tmp is its own)."""
    secret = host_dir / "secret.txt"
    secret.write_text("hidden")
    (kiln_home / "settings.json").write_text(json.dumps({"sandbox": {"hide": [str(secret)]}}))
    return secret


def _run_socket() -> tuple[Path, socket.socket]:
    """A listening socket directly under /run (covered when commands have no network)."""
    path = Path(f"/run/kiln-vanish-{uuid.uuid4().hex[:8]}.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(1)
    return path, srv


def _starts(count: Path) -> int:
    return len(count.read_text().split()) if count.exists() else 0


@pytest.mark.parametrize("what", ["hidden file", "socket under /run"])
def test_a_command_starts_when_a_covered_path_goes_away_first(
    tmp_path: Path, kiln_home: Path, host_dir: Path, what: str
) -> None:
    if what == "socket under /run":
        if os.geteuid() != 0:
            pytest.skip("creates a socket under /run")
        vanish, srv = _run_socket()
    else:
        vanish, srv = _hidden_file(kiln_home, host_dir), None
    env, count = _stand_in(tmp_path, vanish)
    root = tmp_path / "repo"
    root.mkdir()
    try:
        _, out = kiln_run_json(root, [
            {"tool_calls": [{"name": "run_command", "input": {"command": f"echo ran {MARK}"}}]},
        ], home=host_dir, kiln_home=kiln_home, script=tmp_path / "script.json", env=env)  # fmt: skip
    finally:
        if srv is not None:
            srv.close()
        vanish.unlink(missing_ok=True)
    results = json.dumps(tool_results(Path(out["transcript"])))
    assert not vanish.exists()  # the stand-in removed it before bwrap's first start
    assert "exit code 0" in results and f"ran {MARK}" in results, results
    assert "Can't create file" not in results, results
    assert _starts(count) == 2


def test_a_command_that_prints_bwraps_line_runs_once(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    """The attack: a command prints the line bwrap prints when a covered path went away, naming a
    path the sandbox covers, and exits 1 as bwrap does. The path is still there, so the command
    did run: its output is the result, and it is not started again."""
    secret = _hidden_file(kiln_home, host_dir)
    env, count = _stand_in(tmp_path, host_dir / "not-armed")
    (tmp_path / "armed").unlink()
    root = tmp_path / "repo"
    root.mkdir()
    line = f"bwrap: Can't create file at {secret}: Read-only file system"
    _, out = kiln_run_json(root, [
        {"tool_calls": [{"name": "run_command",
                         "input": {"command": f"echo \"{line}\" # {MARK}\nexit 1"}}]},
    ], home=host_dir, kiln_home=kiln_home, script=tmp_path / "script.json", env=env)  # fmt: skip
    results = json.dumps(tool_results(Path(out["transcript"])))
    assert "exit code 1" in results and "Can't create file at" in results, results
    assert _starts(count) == 1


SERVER = """\
try:
    from mcp.server.mcpserver import MCPServer
except ImportError:
    from mcp.server.fastmcp import FastMCP as MCPServer
server = MCPServer("vanish")

@server.tool()
def ping(text: str) -> str:
    \"\"\"Echo a text back (a harmless tool).\"\"\"
    return "pong " + text

server.run()
"""


def test_an_mcp_server_starts_when_a_covered_path_goes_away_first(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    """The dry run's failure: a stdio server's start, through the session's sandbox."""
    secret = _hidden_file(kiln_home, host_dir)
    env, count = _stand_in(tmp_path, secret)
    server = host_dir / MARK / "server.py"  # outside the sandbox's private /tmp; names MARK
    server.parent.mkdir()
    server.write_text(SERVER)
    (kiln_home / "mcp.json").write_text(json.dumps({"mcpServers": {"vanish": {
        "command": sys.executable, "args": [str(server)]}}}))  # fmt: skip
    root = tmp_path / "repo"
    root.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "tool_search", "input": {"query": "echo a text back"}}]},
        {"tool_calls": [{"name": "vanish__ping", "input": {"text": "hi"}}]},
        "Done.",
    ]))  # fmt: skip
    proc = kiln_run(root, home=host_dir, kiln_home=kiln_home, script=script, env=env)
    out = json.loads(proc.stdout)
    results = json.dumps(tool_results(Path(out["transcript"])))
    assert not secret.exists()
    assert "pong hi" in results, (results, proc.stderr)
    assert _starts(count) == 2


def test_the_ci_verification_starts_when_a_covered_path_goes_away_first(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    """`kiln run --ci --verify`: the verification before the model's turn runs, and passes."""
    secret = _hidden_file(kiln_home, host_dir)
    env, count = _stand_in(tmp_path, secret)
    root = tmp_path / "repo"
    committing_repo(root)("init", {"app.py": "x = 1\n"})
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Done."]))
    proc = kiln_run(root, home=host_dir, kiln_home=kiln_home, script=script, mode="ci", env=env,
                    extra=("--ci", "--verify", f"echo verified {MARK}"))  # fmt: skip
    before = json.loads(proc.stdout)["verify_before"]
    assert before["passed"] and f"verified {MARK}" in before["tail"], (before, proc.stderr)
    assert not secret.exists() and _starts(count) >= 2


def test_a_skills_script_starts_when_a_covered_path_goes_away_first(
    tmp_path: Path, host_dir: Path
) -> None:
    """An installed skill's sidecar tool, its script started through the session's launcher."""
    with market(tmp_path) as m:
        tools = sidecar("vanish", "Say hello.", "import sys\nsys.stdin.read()\nprint('hello')\n")
        m.publish(skill_folder(tmp_path / "src", "probe", files=tools), "1.0.0")
        repo = tmp_path / "repo"
        repo.mkdir()
        m.cli("skills", "install", "--user", "acme/probe", "--yes", cwd=repo)
        secret = _hidden_file(m.kiln_home, host_dir)
        env, count = _stand_in(tmp_path, secret, mark="scripts/vanish.py")
        run = run_with_wire(m, repo, [step("call_tool", name="probe__vanish", arguments={})],
                            "--mode", "yolo", "--output-format", "json", env=env)  # fmt: skip
    assert run.proc.returncode == 0, run.proc.stderr
    (result,) = run.tool_results()
    assert "hello" in result and not secret.exists(), result
    assert _starts(count) == 2
