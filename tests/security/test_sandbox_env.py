"""What a sandboxed command inherits from the host (docs/security.md section 4, "Environment"
and "hidden"), through the real `kiln run` in `yolo`: credentials whose names or values the
first scrubber missed (``MYSQL_PWD``, ``SMTP_PASS``, ``CI_JOB_JWT``, a database URL or proxy with
a password, a token after a user name as Bundler's ``BUNDLE_GITHUB__COM=x-access-token:ghp_…``
holds it) never reach a command; nor do credential files such variables name, wherever they
are (google-github-actions/auth writes ``GOOGLE_APPLICATION_CREDENTIALS`` into the workspace:
neither a command nor ``read_file``/``grep`` reads it); and the login session's sockets (the
session bus whose systemd runs ``systemd-run --user`` outside any sandbox, an ssh agent) cannot
be connected to, even where the environment names them."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run_json, tool_results

CANARIES = {
    "MYSQL_PWD": "canary-mysql-pwd",
    "SMTP_PASS": "canary-smtp-pass",
    "CI_JOB_JWT": "canary-job-jwt",
    "DATABASE_URL": "postgres://app:canary-db-password@db.internal/app",
    "https_proxy": "http://me:canary-proxy-password@proxy:3128",
    "ID_TOKEN_LIKE": "eyJhbGciOiJSUzI1NiJ9.eyJjYW5hcnkiOiJqd3QifQ.sig",
    # A token after a user name or a scheme word: Bundler's per-host credential, a header.
    "BUNDLE_GITHUB__COM": "x-access-token:ghp_canary-bundler",
    "REGISTRY_HEADER": "Bearer glpat-canary-header",
}
MARKS = ("canary-", "eyJjYW5hcnki", "CANARY-FILE")

CONNECT = """
import os, socket, sys
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path); print("CONNECTED", path)
    except OSError as exc:
        print("refused", path, exc.__class__.__name__)
"""


def _listener(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(8)
    srv.setblocking(False)
    return srv


def _accepted(srv: socket.socket) -> bool:
    try:
        srv.accept()[0].close()
        return True
    except BlockingIOError:
        return False


def test_secrets_and_session_sockets_stay_on_the_host(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    runtime = host_dir / "run-user"  # outside /tmp, which the sandbox replaces anyway
    bus, agent = runtime / "bus", host_dir / "agent" / "ssh.sock"
    listeners = [_listener(bus), _listener(agent), _listener(runtime / "wayland-0")]
    root = tmp_path / "repo"
    root.mkdir()
    (root / "connect.py").write_text(CONNECT)
    (root / "gha-creds-1f2e.json").write_text('{"private_key": "CANARY-FILE-GCP"}\n')
    home = host_dir / "home"  # outside /tmp, which the sandbox replaces anyway
    for rel in (".codex/auth.json", ".claude/.credentials.json", ".terraformrc", ".bash_history",
                ".s3cfg"):  # fmt: skip
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"CANARY-FILE-{rel}\n")
    (host_dir / "kube").mkdir()
    (host_dir / "kube" / "config").write_text("token: CANARY-FILE-KUBE\n")
    sockets = " ".join(str(p) for p in (bus, agent, runtime / "wayland-0"))
    env = {
        **CANARIES,
        "XDG_RUNTIME_DIR": str(runtime),
        "SSH_AUTH_SOCK": str(agent),
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={bus}",
        "GOOGLE_APPLICATION_CREDENTIALS": str(root / "gha-creds-1f2e.json"),
        "KUBECONFIG": f"/nonexistent:{host_dir / 'kube' / 'config'}",
    }
    try:
        _, out = kiln_run_json(root, [
            {"tool_calls": [{"name": "run_command", "input": {"command": "env; cat /proc/self/environ"}}]},
            {"tool_calls": [{"name": "run_command", "input": {"command": f"python3 connect.py {sockets}"}}]},
            {"tool_calls": [{"name": "run_command", "input": {"command": f"cat gha-creds-*.json {host_dir}/kube/config"}}]},
            {"tool_calls": [{"name": "run_command", "input": {"command": "cat ~/.codex/auth.json ~/.claude/.credentials.json ~/.terraformrc ~/.bash_history ~/.s3cfg; ls -a ~"}}]},
            {"tool_calls": [{"name": "read_file", "input": {"path": "gha-creds-1f2e.json"}}]},
            {"tool_calls": [{"name": "grep", "input": {"pattern": "CANARY"}}]},
        ], home=home, kiln_home=kiln_home, script=tmp_path / "script.json", env=env)  # fmt: skip
        seen = json.dumps(tool_results(Path(out["transcript"])))
        assert "PATH=" in seen and "refused" in seen and ".codex" in seen  # the commands did run
        assert not [m for m in MARKS if m in seen], seen
        assert "CONNECTED" not in seen, seen
        assert not any(_accepted(s) for s in listeners)
    finally:
        for s in listeners:
            s.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="creates daemon sockets under /run")
def test_system_daemon_sockets_are_hidden(tmp_path: Path, kiln_home: Path, host_dir: Path) -> None:
    """A Docker, Podman or libvirt socket is root on the host to whoever may connect. Also: with
    ``/var/run`` a link to ``/run`` (Debian, Ubuntu), a Docker socket made every command fail
    (bwrap could not make ``/var/run/docker.sock`` a mount point)."""
    candidates = ("/run/docker.sock", "/run/podman/podman.sock", "/run/libvirt/libvirt-sock")
    made = [p for p in map(Path, candidates) if not p.parent.exists()]
    paths = [
        p
        for p in map(Path, candidates)
        if not p.exists() and (p in made or p.parent == Path("/run"))
    ]
    if not paths:
        pytest.skip("the daemons' folders exist here")
    listeners = [_listener(p) for p in paths]
    root = tmp_path / "repo"
    root.mkdir()
    (root / "connect.py").write_text(CONNECT)
    try:
        _, out = kiln_run_json(root, [
            {"tool_calls": [{"name": "run_command",
                             "input": {"command": "python3 connect.py " + " ".join(map(str, paths))}}]},
        ], home=host_dir, kiln_home=kiln_home, script=tmp_path / "script.json")  # fmt: skip
        seen = json.dumps(tool_results(Path(out["transcript"])))
        assert seen.count("refused") == len(paths) and "CONNECTED" not in seen, seen
        assert not any(_accepted(s) for s in listeners)
    finally:
        for s, p in zip(listeners, paths, strict=True):
            s.close()
            p.unlink()
            if p in made:
                p.parent.rmdir()


def test_container_daemon_sockets_in_the_home_folder_are_hidden(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    """Docker Desktop, Colima, Rancher Desktop, Lima and Podman machines listen in the home
    folder, and `DOCKER_HOST`/`CONTAINER_HOST` may name any socket: a container the daemon starts
    for whoever connects mounts what it likes. Before, only sockets under `/run` were hidden, so a
    command reached each of these."""
    home = host_dir / "home"
    named = host_dir / "engine" / "docker.sock"
    paths = [home / ".docker" / "desktop" / "docker.sock", home / ".colima" / "default" /
             "docker.sock", home / ".rd" / "docker.sock", home / ".lima" / "vm" / "sock" /
             "docker.sock", named, host_dir / "podman" / "podman.sock"]  # fmt: skip
    listeners = [_listener(p) for p in paths]
    root = tmp_path / "repo"
    root.mkdir()
    (root / "connect.py").write_text(CONNECT)
    env = {"DOCKER_HOST": f"unix://{named}", "CONTAINER_HOST": f"unix://{paths[-1]}"}
    command = "python3 connect.py " + " ".join(str(p) for p in paths)
    try:
        _, out = kiln_run_json(
            root, [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}],
            home=home, kiln_home=kiln_home, script=tmp_path / "script.json", env=env,
        )  # fmt: skip
        seen = json.dumps(tool_results(Path(out["transcript"])))
        assert "refused" in seen and "CONNECTED" not in seen, seen
        assert not any(_accepted(s) for s in listeners)
    finally:
        for s in listeners:
            s.close()


def test_credentials_a_variable_moves_elsewhere_stay_hidden(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    """A Kerberos ticket cache (`KRB5CCNAME=FILE:…`), a keytab, Podman's registry login
    (`REGISTRY_AUTH_FILE`), gh's token under `XDG_CONFIG_HOME`, Hugging Face's under `HF_HOME` and
    cargo's under `CARGO_HOME`: the same secrets as the hidden `~/.config/gh` or
    `~/.cargo/credentials.toml`, where the environment put them. Before, a command read each."""
    files = {
        "KRB5CCNAME": ("krb5cc_0", "FILE:"),
        "KRB5_CLIENT_KTNAME": ("client.keytab", ""),
        "REGISTRY_AUTH_FILE": ("auth.json", ""),
        "PGSERVICEFILE": ("pg_service.conf", ""),
    }
    env: dict[str, str] = {}
    paths = []
    for name, (file, prefix) in files.items():
        (host_dir / file).write_text(f"CANARY-FILE-{name}\n")
        env[name] = f"{prefix}{host_dir / file}"
        paths.append(host_dir / file)
    for var, rel in (("XDG_CONFIG_HOME", "gh/hosts.yml"), ("HF_HOME", "token"),
                     ("CARGO_HOME", "credentials.toml")):  # fmt: skip
        folder = host_dir / var.lower()
        (folder / rel).parent.mkdir(parents=True)
        (folder / rel).write_text(f"CANARY-FILE-{var}\n")
        env[var] = str(folder)
        paths.append(folder / rel)
    root = tmp_path / "repo"
    root.mkdir()
    command = "cat " + " ".join(str(p) for p in paths) + "; echo done"
    _, out = kiln_run_json(
        root, [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}],
        home=host_dir / "home", kiln_home=kiln_home, script=tmp_path / "script.json", env=env,
    )  # fmt: skip
    seen = json.dumps(tool_results(Path(out["transcript"])))
    assert "done" in seen and "CANARY-FILE" not in seen, seen


def test_gits_command_line_config_survives_the_scrub(tmp_path: Path, kiln_home: Path) -> None:
    """`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0` (a CI image's `safe.directory`,
    say): the scrub took every `GIT_CONFIG_KEY_n` for its name and left the count, so every git
    command in the sandbox failed with "missing config key". Now the keys are kept (a value that
    looks secret still goes, with its key), and `safe.bareRepository=explicit` is added."""
    root = tmp_path / "repo"
    root.mkdir()
    env = {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "user.name",
           "GIT_CONFIG_VALUE_0": "kiln-canary-name", "GIT_CONFIG_KEY_1": "http.extraHeader",
           "GIT_CONFIG_VALUE_1": "Authorization: token ghp_canary0123456789abcdef"}  # fmt: skip
    command = "git config user.name; git config safe.bareRepository; git config http.extraHeader"
    _, out = kiln_run_json(
        root, [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}],
        home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json", env=env,
    )  # fmt: skip
    seen = json.dumps(tool_results(Path(out["transcript"])))
    assert "kiln-canary-name" in seen and "explicit" in seen, seen
    assert "ghp_canary" not in seen and "missing config key" not in seen, seen
