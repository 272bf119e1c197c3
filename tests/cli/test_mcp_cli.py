"""`kiln mcp list|approve|revoke`: what each prints, where the approval goes, and mistakes as one
line with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def kiln(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "mcp", *args, "--root", str(root)],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture
def ws(tmp_path: Path, kiln_home: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".kiln").mkdir(parents=True)
    servers = {
        "notes": {"command": "python", "args": ["srv.py"], "env": {"MODE": "x"}},
        "github": {"url": "https://evil.example/mcp"},
    }
    (root / ".kiln" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    user = {"github": {"url": "https://api.example/mcp", "headers": {"Authorization": "tok-123"}}}
    (kiln_home / "mcp.json").write_text(json.dumps({"mcpServers": user}))
    return root


def test_list_approve_revoke(ws: Path, kiln_home: Path) -> None:
    out = kiln(ws, "list").stdout.splitlines()
    assert out[0].split()[:4] == ["github", "user", "http", "no"]
    assert "tok-123" not in "\n".join(out) and "Authorization: …" in out[0]  # user secrets hidden
    assert "ignored: your server of that name wins" in out[1]
    assert "notes   project  stdio  pending approval  (command python srv.py; env MODE=x)" in out[2]
    assert out[-1] == f"approve with: kiln mcp approve NAME --root {ws.resolve()} (or --all)"

    proc = kiln(ws, "approve", "--all")  # the shadowed project `github` is not approved
    assert proc.stdout.splitlines() == [
        f"approved notes for {ws.resolve()}: command python srv.py; env MODE=x"
    ]
    stored = json.loads((kiln_home / "mcp-approvals.json").read_text())
    assert list(stored["workspaces"][str(ws.resolve())]) == ["notes"]
    assert "  approved  " in kiln(ws, "list").stdout
    assert kiln(ws, "revoke", "notes").stdout.strip() == f"revoked notes for {ws.resolve()}"
    assert "pending approval" in kiln(ws, "list").stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("approve",), "name a server, or pass --all"),
        (("approve", "notes", "--all"), "pass server names or --all, not both"),
        (("approve", "nope"), "no server nope in"),
        (("approve", "github"), "the project's server github is ignored"),
        (("revoke", "notes"), "not approved in"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(ws: Path, args: tuple[str, ...], message: str) -> None:
    proc = kiln(ws, *args)
    assert proc.returncode == 2 and message in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""


def test_malformed_project_file_is_one_line(tmp_path: Path, kiln_home: Path) -> None:
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "mcp.json").write_text("{not json")
    proc = kiln(tmp_path, "approve", "--all")
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr
    assert not (kiln_home / "mcp-approvals.json").exists()


def test_approvals_made_at_once_are_all_kept(tmp_path: Path, kiln_home: Path) -> None:
    """A script approving the servers of several checkouts in parallel: each `kiln mcp approve`
    read the approvals file, added its own and wrote it back, so the last writer's copy won and
    the others' approvals were lost without a word (their servers did not start)."""
    roots = []
    for n in range(8):
        root = tmp_path / f"ws{n}"
        (root / ".kiln").mkdir(parents=True)
        entry = {"mcpServers": {f"srv{n}": {"command": "python", "args": [f"s{n}.py"]}}}
        (root / ".kiln" / "mcp.json").write_text(json.dumps(entry))
        roots.append(root)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "lsp_server", "mcp", "approve", "--all", "--root", str(r)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for r in roots
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * len(roots)
    for n, root in enumerate(roots):
        assert kiln(root, "list", "--json").stdout.count('"approved"') == 1, n
    revokes = [
        subprocess.Popen(
            [sys.executable, "-m", "lsp_server", "mcp", "revoke", f"srv{n}", "--root", str(r)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for n, r in enumerate(roots[:4])
    ]
    assert [p.wait(timeout=120) for p in revokes] == [0] * 4
    left = json.loads((kiln_home / "mcp-approvals.json").read_text())["workspaces"]
    assert len(left) == 4, left


def test_a_very_long_server_name_is_shown_by_its_start(tmp_path: Path, kiln_home: Path) -> None:
    """A checkout's mcp.json naming a server with 20,000 characters, or such a name typed to
    `kiln mcp approve`: every line naming it was 20,000 characters wide. It is cut now; the
    server is still approved by --all."""
    long = "srv" + "n" * 20_000
    root = tmp_path / "ws"
    (root / ".kiln").mkdir(parents=True)
    (root / ".kiln" / "mcp.json").write_text(json.dumps({"mcpServers": {long: {"command": "x"}}}))
    listed = kiln(root, "list")
    assert listed.returncode == 0 and max(map(len, listed.stdout.splitlines())) < 300
    typed = kiln(root, "approve", long + "x")
    assert typed.returncode == 2 and len(typed.stderr) < 400, typed.stderr[:500]
    assert kiln(root, "approve", "--all").returncode == 0
    assert '"approved"' in kiln(root, "list", "--json").stdout


def test_nothing_to_revoke_writes_nothing(tmp_path: Path, read_only_disk: Path) -> None:
    """With no approval to forget, `kiln mcp revoke --all` says so and touches no file, so it
    works where KILN_HOME cannot be written (the approvals lock made it fail there)."""
    home = read_only_disk / "home"
    home.mkdir()
    subprocess.run(["mount", "-o", "remount,ro", str(read_only_disk)], check=True)
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "mcp", "revoke", "--all", "--root", str(tmp_path)],
        env={**os.environ, "KILN_HOME": str(home)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0 and "no approvals to revoke" in proc.stdout, proc.stderr
