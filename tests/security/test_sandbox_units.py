"""The sandbox's parts: the policy from settings (a project file only narrows), the scrubbed
environment, the bubblewrap command line run for real, the macOS profile's text, and the refusal
when the sandbox is required but missing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.errors import ConfigError
from agent.sandbox import (
    SHELL,
    Sandbox,
    SandboxUnavailable,
    find_backend,
    load_policy,
    seatbelt,
)
from agent.sandbox.env import scrub
from tests.waiting import wait_until

needs_bwrap = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def settings(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_project_settings_only_narrow(tmp_path: Path) -> None:
    root, home = tmp_path / "repo", tmp_path / "kh"
    settings(
        home / "settings.json",
        {"sandbox": {"network_commands": ["pip install *"], "write": [str(tmp_path / "cache")]}},
    )
    settings(root / ".kiln" / "settings.json", {"sandbox": {
        "network": True, "write": ["/"], "env_pass": ["GITHUB_TOKEN"], "enabled": False,
        "hide": [str(tmp_path / "private")], "modes": {"ci": {"network": True}}}})  # fmt: skip
    policy = load_policy(root, home, "ci")
    assert policy.enabled and not policy.network and policy.env_pass == []
    assert policy.write == [tmp_path / "cache"] and policy.network_commands == [
        "run_command(pip install *)"
    ]
    assert tmp_path / "private" in policy.hide
    ignored = " ".join(policy.warnings)
    for key in ("network", "write", "env_pass", "enabled"):
        assert f"sandbox.{key} ignored" in ignored
    settings(root / ".kiln" / "settings.json", {"sandbox": {"network": False}})
    settings(home / "settings.json", {"sandbox": {"network": True}})
    assert load_policy(root, home, "ask").network is False  # the project may turn it off


def test_user_settings_per_mode_and_bad_values(tmp_path: Path) -> None:
    home = tmp_path / "kh"
    settings(
        home / "settings.json",
        {"sandbox": {"network": False, "modes": {"yolo": {"network": True}}}},
    )
    assert (
        load_policy(tmp_path, home, "yolo").network
        and not load_policy(tmp_path, home, "ask").network
    )
    for bad in ({"sandbox": []}, {"sandbox": {"network": "yes"}}, {"sandbox": {"write": "/x"}},
                {"sandbox": {"network_commands": ["Edit(x)"]}}, {"sandbox": {"modes": []}}):  # fmt: skip
        settings(home / "settings.json", bad)
        with pytest.raises(ConfigError):
            load_policy(tmp_path, home, "ask")


def test_environment_is_scrubbed() -> None:
    env = {
        "PATH": "/bin", "HOME": "/h", "LANG": "C", "DEPLOY_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_REGION": "eu", "GITHUB_TOKEN": "x", "DB_PASSWORD": "x", "SSH_AUTH_SOCK": "/s",
        "ANTHROPIC_BASE_URL": "http://x", "INNOCENT": "ghp_abcdefghijklmnop", "PEM": "-----BEGIN RSA PRIVATE KEY-----",
        "KILN_HOME": "/k", "XDG_SESSION_TYPE": "tty", "MY_TOKEN": "keep",
    }  # fmt: skip
    assert scrub(env, keep=["MY_TOKEN"]) == {"PATH": "/bin", "HOME": "/h", "LANG": "C",
                                              "XDG_SESSION_TYPE": "tty", "MY_TOKEN": "keep"}  # fmt: skip


@needs_bwrap
def test_bubblewrap_walls(tmp_path: Path) -> None:
    root, home, out = (
        tmp_path / "ws",
        Path("/var/tmp") / f"kiln-unit-{tmp_path.name}",
        tmp_path / "kh",
    )
    scratch = Path("/tmp") / f"kiln-unit-{tmp_path.name}.txt"
    root.mkdir()
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET\n")
    (out / "skills" / "pdf").mkdir(parents=True)
    (out / "skills" / "pdf" / "SKILL.md").write_text("SKILL-TEXT\n")
    (out / "credentials.json").write_text("KILN-CRED\n")
    try:
        policy = load_policy(root, out, "ask")
        policy.hide.append(home / ".ssh")
        box = Sandbox(root, policy, kiln_home=out)
        script = (
            f"echo ok > ws.txt; echo $? ; cat {home}/.ssh/id_rsa; echo x >> .git/config; "
            f"echo x > {home}/x; echo private > {scratch} && cat {scratch}; "
            "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)' 2>&1 | tail -1; "
            f"cat {out}/credentials.json {out}/skills/pdf/SKILL.md; echo x >> {out}/skills/pdf/SKILL.md"
        )
        out_text = subprocess.run(
            box.shell(script), cwd=root, capture_output=True, text=True, env=box.env()
        ).stdout
        out_text += subprocess.run(
            box.shell(script), cwd=root, capture_output=True, text=True, env=box.env()
        ).stderr
        assert (root / "ws.txt").read_text() == "ok\n"  # the workspace is writable
        assert "SECRET" not in out_text  # hidden
        assert (root / ".git" / "config").read_text() == "[core]\n"  # read-only
        assert not (home / "x").exists()  # the rest is read-only
        assert "private" in out_text and not scratch.exists()  # /tmp is the sandbox's own
        assert "Network is unreachable" in out_text
        assert "KILN-CRED" not in out_text  # $KILN_HOME hidden ...
        assert "SKILL-TEXT" in out_text  # ... its skills/ given back ...
        assert (out / "skills" / "pdf" / "SKILL.md").read_text() == "SKILL-TEXT\n"  # read-only
        box.close()
    finally:
        import shutil

        shutil.rmtree(home, ignore_errors=True)


def test_required_sandbox_refuses_without_a_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KILN_BWRAP", str(tmp_path / "no-such-bwrap"))
    monkeypatch.setattr("sys.platform", "linux")
    policy = load_policy(tmp_path, tmp_path / "kh", "ci")
    with pytest.raises(SandboxUnavailable):
        Sandbox(tmp_path, policy, kiln_home=tmp_path / "kh", required=True).shell("true")
    loose = Sandbox(tmp_path, policy, kiln_home=tmp_path / "kh")
    assert loose.shell("true") == [SHELL, "-c", "true"]
    assert "commands are unconfined" in loose.status()
    assert "DEPLOY_TOKEN" not in loose.env({"DEPLOY_TOKEN": "x", "PATH": "/bin"})


def test_seatbelt_profile_has_the_same_walls(tmp_path: Path) -> None:
    (tmp_path / "ws" / ".git" / "hooks").mkdir(parents=True)
    text = seatbelt.profile(
        root=tmp_path / "ws", tmp=tmp_path / "tmp", writable=[], hidden=[Path("/Users/me/.ssh")],
        readable=[tmp_path / "kh" / "skills"], network=False,
    )  # fmt: skip
    assert "(deny file-write*)" in text
    assert f'(subpath "{tmp_path / "ws"}")' in text
    assert f'(subpath "{tmp_path / "ws" / ".git/hooks"}")' in text
    assert '(deny file-read* file-write* (subpath "/Users/me/.ssh")' in text
    assert f'(deny file-write* (literal "{tmp_path / "ws" / ".git"}"))' in text  # not renamed away
    assert "(deny network*)" in text
    granted = seatbelt.profile(
        root=tmp_path, tmp=tmp_path, writable=[], hidden=[], readable=[], network=True
    )
    assert "(deny network*)" not in granted


def test_seatbelt_refuses_hidden_sockets_even_where_unix_sockets_are_allowed(
    tmp_path: Path,
) -> None:
    """macOS puts the ssh agent's socket under /private/tmp, where the profile lets commands
    connect to Unix sockets; connecting is a network operation to Seatbelt, so hiding the path
    from reads alone left the agent usable (sign, push as the user)."""
    agent = Path("/private/tmp/com.apple.launchd.Ab1/Listeners")
    for network in (False, True):
        text = seatbelt.profile(
            root=tmp_path / "ws", tmp=tmp_path / "tmp", writable=[], readable=[], network=network,
            hidden=[agent, Path("/Users/me/.kiln")],
        )  # fmt: skip
        last = text.strip().splitlines()[-1]
        assert last.startswith("(deny network* ")
        assert (
            r'(remote unix-socket (path-regex #"^/private/tmp/com\.apple\.launchd\.Ab1/Listeners(/|$)"))'
            in last
        )
        assert r'(path-regex #"^/Users/me/\.kiln(/|$)")' in last
        assert r'(path-regex #"^/var/run/docker\.sock(/|$)")' in last


def _running(marker: str) -> bool:
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


@needs_bwrap
def test_processes_a_command_leaves_behind_end_with_it(tmp_path: Path) -> None:
    import sys

    box = Sandbox(
        tmp_path, load_policy(tmp_path, tmp_path / "kh", "ask"), kiln_home=tmp_path / "kh"
    )
    marker = f"kiln-bg-{tmp_path.name}"
    command = f"nohup {sys.executable} -c 'import time; time.sleep(300)' {marker} >/dev/null 2>&1 & echo started"
    out = subprocess.run(
        box.shell(command), cwd=tmp_path, capture_output=True, text=True, env=box.env()
    )
    assert out.stdout.strip() == "started"
    assert wait_until(lambda: not _running(marker))  # fires only if it stays
    unconfined = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", marker])
    try:
        assert wait_until(lambda: _running(marker))  # the observer sees one that does survive
    finally:
        unconfined.kill()
        unconfined.wait()


def test_a_bubblewrap_that_cannot_start_is_no_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where user namespaces are off, bwrap exists but fails: commands must not run through it
    (every one would fail) and must not count as confined."""
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    monkeypatch.setenv("KILN_BWRAP", str(broken))
    monkeypatch.setattr("sys.platform", "linux")
    assert find_backend() is None
    box = Sandbox(
        tmp_path,
        load_policy(tmp_path, tmp_path / "kh", "ci"),
        kiln_home=tmp_path / "kh",
        required=True,
    )
    with pytest.raises(SandboxUnavailable):
        box.shell("true")


@needs_bwrap
def test_a_python_environment_under_tmp_stays_runnable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A venv under /tmp (the sandbox's /tmp is its own) is given back read-only, so commands
    run with Kiln's interpreter work; the workspace stays writable and the venv does not."""
    venv = Path("/tmp") / f"kiln-venv-{tmp_path.name}"
    (venv / "bin").mkdir(parents=True)
    tool = venv / "bin" / "tool"
    tool.write_text("#!/bin/sh\necho tool-ran\n")
    tool.chmod(0o755)
    root = tmp_path / "ws"
    root.mkdir()
    try:
        monkeypatch.setattr("sys.prefix", str(venv))
        box = Sandbox(root, load_policy(root, tmp_path / "kh", "ask"), kiln_home=tmp_path / "kh")
        proc = subprocess.run(
            box.shell(f"{tool}; echo x > {venv}/new; echo w > ws.txt"),
            cwd=root,
            capture_output=True,
            text=True,
            env=box.env(),
        )
        box.close()
        assert "tool-ran" in proc.stdout, proc.stderr
        assert not (venv / "new").exists()  # read-only
        assert (root / "ws.txt").read_text() == "w\n"
    finally:
        import shutil

        shutil.rmtree(venv, ignore_errors=True)


@needs_bwrap
@pytest.mark.parametrize("gitfile", [False, True])
def test_protected_paths_cannot_be_swapped_out(tmp_path: Path, gitfile: bool) -> None:
    """Renaming the folder above a read-only path and putting a writable copy in its place
    (``mv .git x && cp -r x .git``) fails; a worktree's ``.git`` file is read-only."""
    root = tmp_path / "ws"
    (root / "config").mkdir(parents=True)
    (root / "config" / "prod.yml").write_text("safe\n")
    if gitfile:
        (root / ".git").write_text("gitdir: /elsewhere/.git/worktrees/ws\n")
    else:
        (root / ".git" / "hooks").mkdir(parents=True)
        (root / ".git" / "config").write_text("[core]\n")
    box = Sandbox(root, load_policy(root, tmp_path / "kh", "yolo"), kiln_home=tmp_path / "kh")
    box.readonly.append(root / "config" / "prod.yml")  # as a deny rule Edit(config/prod.yml)
    script = (
        "mv .git .gitx && cp -r .gitx .git; mkdir -p .git/hooks;"
        " echo 'touch pwned' > .git/hooks/pre-commit; echo 'gitdir: /tmp/evil' > .git;"
        " mv config c2 && mkdir config; echo pwned > config/prod.yml; true"
    )
    subprocess.run(box.shell(script), cwd=root, capture_output=True, env=box.env())
    box.close()
    assert (root / "config" / "prod.yml").read_text() == "safe\n"
    assert not (root / ".gitx").exists() and not (root / "c2").exists()
    if gitfile:
        assert (root / ".git").read_text() == "gitdir: /elsewhere/.git/worktrees/ws\n"
    else:
        assert not (root / ".git" / "hooks" / "pre-commit").exists()


def test_session_sockets_come_from_the_environment_but_never_cover_tmp_or_home() -> None:
    from agent.sandbox.policy import home_dirs, session_sockets

    env = {
        "XDG_RUNTIME_DIR": "/run/user/1234",
        "SSH_AUTH_SOCK": "/home/me/.gnupg/S.gpg-agent.ssh",
        "GPG_AGENT_INFO": "/run/gpg/S.gpg-agent:0:1",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/bus/a,guid=x;unix:abstract=/tmp/dbus-y",
    }
    found = {str(p) for p in session_sockets(env)}
    assert {"/run/user/1234", "/home/me/.gnupg/S.gpg-agent.ssh", "/run/gpg/S.gpg-agent",
            "/run/bus/a"} <= found  # fmt: skip
    odd = session_sockets({"XDG_RUNTIME_DIR": "/tmp", "SSH_AUTH_SOCK": str(home_dirs()[0])})
    assert not {Path("/tmp"), *home_dirs()} & set(odd)  # a private /tmp and the home stay
