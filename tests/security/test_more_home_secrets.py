"""Credentials in the home folder that no command needs to read: a RubyGems publishing key, the
GitLab CLI's token, Composer's and Poetry's registry passwords, Maven's master password, an age
private key for sops, Databricks, Hetzner Cloud, Vercel, Firebase, Supabase, CircleCI and ngrok
tokens, and Jupyter's runtime files (the key that signs code for a running kernel, a server's
token), the X server's cookie (with which a command granted the network, which reaches the X
server's abstract socket, types into the user's terminal), also where `XAUTHORITY` names it.
A sandboxed command read each of them. Through the real `kiln run --mode ci`, also where
`XDG_CONFIG_HOME` and `XDG_DATA_HOME` move them: they are hidden now (docs/security.md
section 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import one_command

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

FILES = (
    ".gem/credentials", ".config/glab-cli/config.yml", ".composer/auth.json",
    ".config/composer/auth.json", ".config/pypoetry/auth.toml", ".m2/settings-security.xml",
    ".config/sops/age/keys.txt", ".databrickscfg", ".config/hcloud/cli.toml",
    ".local/share/com.vercel.cli/auth.json", ".config/configstore/firebase-tools.json",
    ".supabase/access-token", ".circleci/cli.yml", ".config/ngrok/ngrok.yml",
    ".ngrok2/ngrok.yml", ".local/share/jupyter/runtime/kernel-1.json", ".Xauthority",
    ".ICEauthority",
)  # fmt: skip
READER = """
import pathlib, sys
for name in sys.argv[1:]:
    try:
        print(name, pathlib.Path(name).read_text())
    except OSError as exc:
        print(name, "unread", exc.strerror)
"""


@pytest.mark.parametrize("moved", [False, True])
def test_more_credentials_of_the_home_folder_are_hidden(
    tmp_path: Path, kiln_home: Path, host_dir: Path, moved: bool
) -> None:
    home = host_dir / "home"
    xdg = {".config/": host_dir / "config", ".local/share/": host_dir / "data"} if moved else {}
    paths = []
    for i, rel in enumerate(FILES):
        path = home / rel
        for prefix, folder in xdg.items():
            if rel.startswith(prefix):
                path = folder / rel[len(prefix) :]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"secret-canary-{i}-c0ffee\n")
        paths.append(str(path))
    root = home / "proj"
    root.mkdir()
    (root / "reader.py").write_text(READER)
    env = {"XDG_CONFIG_HOME": str(xdg.get(".config/", "")),
           "XDG_DATA_HOME": str(xdg.get(".local/share/", ""))}  # fmt: skip
    command = "python3 reader.py " + " ".join(paths)
    _, results = one_command(
        root, command, home=home, kiln_home=kiln_home, script=tmp_path / "script.json", env=env
    )
    assert results.count("unread") == len(FILES), results  # the command ran, read none
    assert "c0ffee" not in results


def test_the_x_cookie_named_by_xauthority_is_hidden(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    cookie = host_dir / "xauth-cookie"
    cookie.write_text("secret-canary-x-c0ffee\n")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "reader.py").write_text(READER)
    _, results = one_command(
        root, f"python3 reader.py {cookie}", home=tmp_path, kiln_home=kiln_home,
        script=tmp_path / "script.json", env={"XAUTHORITY": str(cookie)},
    )  # fmt: skip
    assert "unread" in results and "c0ffee" not in results, results
