"""The sandbox policy: what a command the agent starts may see, write and reach.

Read from the ``"sandbox"`` object of ``$KILN_HOME/settings.json`` (the user's) and of
``.kiln/settings.json`` (the project's). The project file comes with the repository, which may be
hostile (a pull request under CI), so it may only NARROW: it can add hidden paths and turn the
network off, never add writable paths, network, passed-through secrets or switch the sandbox off;
such keys there are ignored with a warning. Schema (every key optional)::

    {"sandbox": {
        "enabled": true,            # user file only: false runs commands unconfined
        "network": false,           # user file only: network for every command of a session
        "network_commands": [],     # user file only: command rules granted the network,
                                    #   e.g. ["pip install *", "Bash(npm ci)"]
        "write": [],                # user file only: extra writable paths ("~/.cache/pip")
        "hide": [],                 # extra paths made invisible (files or folders)
        "env_pass": [],             # user file only: variables passed although they look secret
        "modes": {"ci": {...}, "ask": {...}, "auto-edit": {...}, "yolo": {...}}
                                    # per-mode values of network / network_commands / write
    }}
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.errors import ConfigError
from agent.permission_rules import read_settings
from agent.rules import parse_rule
from kiln_errors.home import home_dirs
from kiln_errors.shown import shown

# Credentials under $HOME that no command needs to read; hidden (tmpfs / empty file) in the sandbox.
HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".azure",
    ".config/gh",
    ".config/gcloud",
    ".config/hub",
    ".netrc",
    ".git-credentials",
    ".gnupg",
    ".docker/config.json",
    ".kube",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".password-store",
    # other agents' and tools' tokens, database passwords
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".config/github-copilot",
    ".huggingface/token",
    ".cache/huggingface/token",
    ".vault-token",
    ".terraformrc",
    ".terraform.d/credentials.tfrc.json",
    ".config/git/credentials",
    # ``git credential-cache``'s daemon answers whoever reaches its socket with the cached
    # passwords (``git credential-cache get``); the second is the folder's older place
    ".cache/git/credential",
    ".git-credential-cache",
    ".config/containers/auth.json",
    ".pgpass",
    ".my.cnf",
    ".local/share/keyrings",
    ".s3cfg",
    ".boto",
    ".config/rclone",
    ".config/doctl",
    ".config/op",
    ".oci",
    ".fly",
    # publishing keys and CLI tokens of package registries and hosts, an age private key,
    # Jupyter's kernel keys and server tokens (each runs code for whoever holds it)
    ".gem/credentials",
    ".config/glab-cli",
    ".composer/auth.json",
    ".config/composer/auth.json",
    ".config/pypoetry/auth.toml",
    ".m2/settings-security.xml",
    ".config/sops/age",
    ".databrickscfg",
    ".config/hcloud",
    ".local/share/com.vercel.cli",
    ".config/configstore/firebase-tools.json",
    ".supabase/access-token",
    ".circleci/cli.yml",
    ".config/ngrok",
    ".ngrok2",
    ".local/share/jupyter/runtime",
    # the X server's cookie: with it, a command granted the network (which reaches the X
    # server's abstract socket) types into the user's terminal; ICE's, the session manager's
    ".Xauthority",
    ".ICEauthority",
    # shell and REPL histories (a pasted "export TOKEN=…", "mysql -p…")
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".local/share/fish/fish_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".irb_history",
    ".viminfo",
    ".lesshst",
    # browser profiles (cookies, saved passwords)
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
)
# Container daemons that listen in the home folder (Docker Desktop, Colima, Rancher Desktop,
# Lima, Podman machines, OrbStack): a container started for whoever connects mounts what it likes.
HOME_DAEMONS = (".docker/desktop", ".docker/run", ".colima", ".rd", ".lima", ".orbstack/run",
                ".local/share/containers/podman/machine")  # fmt: skip
# Variables that name such a daemon's socket anywhere (``unix:///path``).
DAEMON_HOST_VARS = ("DOCKER_HOST", "CONTAINER_HOST", "BUILDKIT_HOST")
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/run/dbus")
WIDENING_KEYS = ("enabled", "network", "network_commands", "write", "env_pass")
MODE_KEYS = ("network", "network_commands", "write")
SECTION_KEYS = ("enabled", "network", "network_commands", "write", "hide", "env_pass", "modes")
MODES = ("ask", "auto-edit", "ci", "yolo")


@dataclass
class SandboxPolicy:
    enabled: bool = True
    network: bool = False
    network_commands: list[str] = field(default_factory=list)
    write: list[Path] = field(default_factory=list)
    hide: list[Path] = field(default_factory=list)
    env_pass: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def session_sockets(environ: dict[str, str] | None = None) -> list[Path]:
    """Sockets of the user's login session that a command could drive to run code outside the
    sandbox or act as the user: the runtime folder (``$XDG_RUNTIME_DIR``, ``/run/user/UID``:
    the session bus, whose systemd answers ``systemd-run --user``; Wayland; PipeWire; rootless
    Podman and Docker; keyring, gpg and ssh agents) and the agent sockets the environment names
    (``SSH_AUTH_SOCK``, ``DBUS_SESSION_BUS_ADDRESS``'s ``unix:path=``, ``GPG_AGENT_INFO``), tmux's,
    screen's, Neovim's and Emacs's servers', and the container daemon ``DOCKER_HOST``/``CONTAINER_HOST`` name, wherever they are. Unix sockets on the filesystem are reachable from any network namespace."""
    env = os.environ if environ is None else environ
    out = []
    if hasattr(os, "getuid"):
        out.append(Path(f"/run/user/{os.getuid()}"))
    if env.get("XDG_RUNTIME_DIR"):
        out.append(Path(env["XDG_RUNTIME_DIR"]))
    for name in ("SSH_AUTH_SOCK", "GPG_AGENT_INFO"):
        if env.get(name):
            out.append(Path(env[name].split(":", 1)[0]))
    for name in DAEMON_HOST_VARS:  # DOCKER_HOST=unix:///…/docker.sock
        if env.get(name, "").startswith("unix://"):
            out.append(Path(env[name][len("unix://") :]))
    # tmux's server runs on the host and runs what a client asks (``tmux run-shell CMD``): the
    # one Kiln runs in (``TMUX=/path/to/socket,PID,N``) and the user's others, whose folder
    # ``TMUX_TMPDIR`` moves out of /tmp (the sandbox's /tmp is its own)
    if env.get("TMUX"):
        out.append(Path(env["TMUX"].split(",", 1)[0]))
    if env.get("TMUX_TMPDIR") and hasattr(os, "getuid"):
        out.append(Path(env["TMUX_TMPDIR"]) / f"tmux-{os.getuid()}")
    # GNU screen's and the editors' servers run on the host too and run what a client asks
    # (``screen -X exec``, Neovim's ``--remote-send``, ``emacsclient --eval``): screen's folder
    # (``/run/screen``, whose sockets the network grant leaves reachable, ``~/.screen``, or where
    # ``SCREENDIR`` moves it), and the sockets ``NVIM``, ``NVIM_LISTEN_ADDRESS`` and
    # ``EMACS_SOCKET_NAME`` name (their defaults lie in the runtime folder or in /tmp, which is the
    # sandbox's own)
    out += [Path("/run/screen"), Path("/var/run/screen"), *(h / ".screen" for h in home_dirs())]
    for name in ("SCREENDIR", "NVIM", "NVIM_LISTEN_ADDRESS", "EMACS_SOCKET_NAME"):
        if env.get(name):
            out.append(Path(env[name]))
    for part in env.get("DBUS_SESSION_BUS_ADDRESS", "").split(";"):
        for option in part.partition(":")[2].split(","):
            if option.startswith("path="):
                out.append(Path(option[5:]))
    broad = {Path("/"), Path("/tmp"), Path("/var/tmp"), *home_dirs()}  # a runtime folder set oddly
    return [p for p in dict.fromkeys(out) if p.is_absolute() and p not in broad]


# Variables that name a credential file or folder (google-github-actions/auth writes
# GOOGLE_APPLICATION_CREDENTIALS into the workspace itself). The variables are scrubbed from a
# command's environment (``env``); the files they name are hidden wherever they are, and the file
# tools may not read them either (``credential_files`` in ``attach``).
CREDENTIAL_FILE_VARS = (
    "XAUTHORITY", "ICEAUTHORITY", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AZURE_CONFIG_DIR", "AZURE_FEDERATED_TOKEN_FILE",
    "KUBECONFIG", "DOCKER_CONFIG", "GNUPGHOME", "GH_CONFIG_DIR", "PGPASSFILE", "NETRC",
    "NPM_CONFIG_USERCONFIG", "HF_TOKEN_PATH", "PASSWORD_STORE_DIR", "VAULT_TOKEN_FILE",
    "TF_CLI_CONFIG_FILE", "GOOGLE_GHA_CREDS_PATH", "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AZURE_CLIENT_CERTIFICATE_PATH", "BOTO_CONFIG",
    "OCI_CLI_CONFIG_FILE", "OCI_CLI_KEY_FILE", "REGISTRY_AUTH_FILE", "PGSERVICEFILE",
    # Kerberos: a ticket cache (``FILE:/path``) and keytabs log in as the user anywhere.
    "KRB5CCNAME", "KRB5_KTNAME", "KRB5_CLIENT_KTNAME",
)  # fmt: skip
# Folders a variable moves a tool's home to, and the secrets ``HOME_SECRETS`` knows there.
MOVED_HOMES = {
    "XDG_CONFIG_HOME": tuple(s[len(".config/") :] for s in HOME_SECRETS if s.startswith(".config/")),
    "XDG_DATA_HOME": tuple(s[len(".local/share/") :] for s in HOME_SECRETS
                           if s.startswith(".local/share/")),
    "XDG_CACHE_HOME": tuple(s[len(".cache/") :] for s in HOME_SECRETS if s.startswith(".cache/")),
    "HF_HOME": ("token",),
    "CARGO_HOME": ("credentials", "credentials.toml"),
}  # fmt: skip


def credential_files(environ: dict[str, str] | None = None) -> list[Path]:
    """The absolute paths the ``CREDENTIAL_FILE_VARS`` name (``KUBECONFIG`` is a list, a
    ``KRB5CCNAME`` of ``FILE:/path`` splits the same way), and the secrets in the folders
    ``MOVED_HOMES`` name."""
    env = os.environ if environ is None else environ
    upper = {k.upper(): v for k, v in env.items()}
    out = []
    for name in CREDENTIAL_FILE_VARS:
        for part in upper.get(name, "").split(os.pathsep):
            path = Path(os.path.expanduser(part)) if part else None
            if path is not None and path.is_absolute() and str(path) != "/":
                out.append(path)
    for name, secrets in MOVED_HOMES.items():
        folder = Path(os.path.expanduser(upper.get(name, "") or "/"))
        if folder.is_absolute() and str(folder) != "/":
            out += [folder / secret for secret in secrets]
    return list(dict.fromkeys(out))


def default_hidden(kiln_home: Path) -> list[Path]:
    hidden = [h / s for h in home_dirs() for s in (*HOME_SECRETS, *HOME_DAEMONS)]
    hidden += [Path(p) for p in SYSTEM_SECRETS]
    hidden += session_sockets()
    hidden += credential_files()
    hidden.append(kiln_home)  # sessions, credentials.json, trusted keys: Kiln's own state
    # the host's temp folder where ``TMPDIR`` moves it out of /tmp (the sandbox's /tmp is its
    # own): other programs' sockets (an editor's git askpass, which answers with the user's
    # credentials; ssh agents) and temp files lie there
    tmpdir = Path(os.environ.get("TMPDIR") or "/")
    if tmpdir.is_absolute() and tmpdir not in {Path("/"), *home_dirs()}:
        hidden.append(tmpdir)
    # and the default one in each home, when ``KILN_HOME`` names another: the sessions and keys
    # of every run without it (before, a command read them there)
    hidden += [h / ".kiln" for h in home_dirs()]
    return hidden


def load_policy(root: Path, kiln_home: Path, mode: str) -> SandboxPolicy:
    policy = SandboxPolicy(hide=default_hidden(kiln_home))
    user = _section(kiln_home / "settings.json")
    project = _section(root / ".kiln" / "settings.json")
    for origin, data in (("user", user), ("project", project)):
        if data is None:
            continue
        where = "$KILN_HOME/settings.json" if origin == "user" else ".kiln/settings.json"
        merged = dict(data)
        modes = data.get("modes", {})
        if not isinstance(modes, dict):
            raise ConfigError(f"{where}: sandbox.modes must be an object of mode names")
        per_mode = modes.get(mode, {})
        if not isinstance(per_mode, dict):
            raise ConfigError(f"{where}: sandbox.modes.{mode} must be an object")
        merged.update({k: v for k, v in per_mode.items() if k in MODE_KEYS})
        policy.warnings += _unread_keys(where, data)
        if origin == "project":
            for key in WIDENING_KEYS:
                narrowing = merged.get(key) is (key == "enabled") and key in ("enabled", "network")
                if key in merged and not narrowing:
                    policy.warnings.append(
                        f".kiln/settings.json: sandbox.{key} ignored (only "
                        "$KILN_HOME/settings.json may widen the sandbox)"
                    )
                    merged.pop(key)
            if merged.get("network") is False:
                policy.network = False
                policy.network_commands = []
        _apply(policy, merged, where, root)
        policy.warnings += _holding_workspace(merged.get("hide"), where, root)
    return policy


def _holding_workspace(hide: Any, where: str, root: Path) -> list[str]:
    """A line for each ``hide`` entry that is, or leads to, the workspace or a folder holding
    it: the sandbox leaves it uncovered (commands would run in an empty folder), and a user who
    wrote it should hear that it hides nothing."""
    if not isinstance(hide, list):
        return []
    lines = []
    workspace = root.resolve()
    for text in hide:
        try:
            real = (root / os.path.expanduser(text)).resolve()
        except (OSError, RuntimeError, ValueError):
            continue
        if real == workspace or real in workspace.parents:
            lines.append(
                f"{where}: sandbox.hide {shown(text)} is or holds the workspace, so it is not "
                "hidden from commands"
            )
    return lines


def _unread_keys(where: str, data: dict[str, Any]) -> list[str]:
    """A line per key Kiln does not read: a misspelled ``"env_pass"`` or a ``hide`` under
    ``modes.ci`` did nothing, and nothing said so."""

    def name(key: object) -> str:
        return str(key).encode("unicode_escape").decode("ascii")

    lines = [f"{where}: sandbox.{name(k)} is not read (only {', '.join(SECTION_KEYS)} are)"
             for k in data if k not in SECTION_KEYS]  # fmt: skip
    for mode, values in data.get("modes", {}).items():
        if mode not in MODES:
            lines.append(f"{where}: sandbox.modes.{name(mode)} is not read "
                         f"(the modes are {', '.join(MODES)})")  # fmt: skip
        elif isinstance(values, dict):
            lines += [f"{where}: sandbox.modes.{mode}.{name(k)} is not read (a mode sets only "
                      f"{', '.join(MODE_KEYS)})" for k in values if k not in MODE_KEYS]  # fmt: skip
    return lines


def _section(path: Path) -> dict[str, Any] | None:
    data = read_settings(path)
    if data is None or "sandbox" not in data:
        return None
    section = data["sandbox"]
    if not isinstance(section, dict):
        raise ConfigError(
            f'{path}: "sandbox" must be an object', hint='e.g. {"sandbox": {"network": false}}'
        )
    return section


def _apply(policy: SandboxPolicy, data: dict[str, Any], where: str, root: Path) -> None:
    """``data``'s keys onto ``policy``; a relative ``write``/``hide`` path is the workspace's
    (``"hide": [".env"]`` hides the workspace's ``.env`` whatever folder Kiln was started in:
    an editor starts ``kiln lsp`` in a folder of its own)."""
    if "enabled" in data:
        policy.enabled = _bool(data["enabled"], where, "enabled")
    if "network" in data:
        policy.network = _bool(data["network"], where, "network")
    for key in ("network_commands", "write", "hide", "env_pass"):
        if key not in data:
            continue
        value = data[key]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError(f"{where}: sandbox.{key} must be a list of non-empty strings")
        if key == "network_commands":
            for text in value:
                rule = text if "(" in text else f"run_command({text})"
                try:
                    parsed = parse_rule(rule)
                except ValueError as exc:
                    raise ConfigError(
                        f"{where}: sandbox.network_commands: {text!r}: {exc}"
                    ) from None
                if parsed.kind != "command":
                    raise ConfigError(
                        f"{where}: sandbox.network_commands: {text!r} is not a command rule"
                    )
                policy.network_commands.append(rule)
        elif key == "env_pass":
            policy.env_pass += value
        else:
            paths = [root / os.path.expanduser(v) for v in value]  # an absolute one stays
            getattr(policy, key).extend(paths)


def _bool(value: Any, where: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: sandbox.{key} must be true or false")
    return value
