"""docs/registry.md's exit codes of `kiln skills`, each met by a real `kiln` process against a
real registry: the code a case exits with is the row of the table that names that case.
README pointed every failure's code at docs/ci.md, whose table is `kiln run`'s: an install a
new user did not confirm exited 5 and an unreachable registry 1, both documented nowhere."""

from __future__ import annotations

import base64
import re
import socket
from pathlib import Path

import pytest

from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill, publish_skill

pytestmark = pytest.mark.e2e

DOC = Path(__file__).resolve().parents[2] / "docs" / "registry.md"


def documented_codes() -> dict[int, str]:
    """The rows of the `kiln skills` exit-code table: code -> its text."""
    text = DOC.read_text()
    assert "### Exit codes" in text, "docs/registry.md has no exit-code table for the client"
    table = text.split("### Exit codes", 1)[1].split("\n\n", 2)[1]
    return {int(m[1]): m[2] for m in re.finditer(r"^\| *(\d+) *\| *(.*) \|$", table, re.M)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_each_failure_exits_with_the_code_its_row_names(
    live: LiveRegistry, tmp_path: Path, project: Path
) -> None:
    publish_skill(live, make_skill(tmp_path / "src", "notes"), "1.0.0")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=live.url)
    bare = cli_env(tmp_path / "home")
    broken = make_skill(tmp_path / "bad", "bad", front="metadata: [unclosed\n")
    cases = {  # what happened -> (the words its row holds, the command)
        "not confirmed": ("not confirmed", ("skills", "install", "acme/notes"), env),
        "no registry": ("no registry", ("skills", "search", "notes"), bare),
        "bad option": ("bad usage", ("skills", "install", "--no-such-option"), env),
        "no such skill": ("the registry does not have", ("skills", "info", "acme/nothing"), env),
        "not installed": ("not installed", ("skills", "remove", "acme/nothing"), env),
        "validate": ("validate", ("skills", "validate", str(broken)), env),
        "unreachable": (
            "cannot reach",
            ("skills", "search", "notes", "--registry", f"http://127.0.0.1:{free_port()}"),
            env,
        ),
    }
    cases["unauthorized"] = (
        "token", ("skills", "publish", str(tmp_path / "src/notes"), "--version", "2.0.0",
                  "--token", "kiln_not-a-token"), env,
    )  # fmt: skip
    leaky = make_skill(tmp_path / "leaky", "leaky")
    (leaky / ".env").write_text("API_KEY=sk-live-0123456789abcdef\n")
    cases["credentials"] = (
        "look like credentials", ("skills", "publish", str(leaky), "--version", "1.0.0"), env,
    )  # fmt: skip
    other_home = tmp_path / "other-home"
    other = cli_env(other_home, KILN_REGISTRY=live.url)
    other_key = base64.b64encode(bytes(range(32))).decode()
    pinned = kiln("skills", "trust", live.url, "--key", other_key, env=other, cwd=project)
    assert pinned.returncode == 0, pinned.stderr
    cases["wrong key"] = ("signature", ("skills", "install", "acme/notes", "--yes"), other)
    data = str(tmp_path / "no-key-here")  # operators' configuration: a URL, a key file
    cases["bad --db"] = ("`--db` or `--blobs`", ("registry", "audit", "--db", "mysql://x/y"), env)
    cases["no key"] = ("no signing key", ("registry", "key", "--data", data), env)
    seen = {case: kiln(*args, env=e, cwd=project, input="") for case, (_, args, e) in cases.items()}
    assert kiln("skills", "install", "acme/notes", "--yes", env=env, cwd=project).returncode == 0
    (project / ".kiln/skills/notes/SKILL.md").write_text("changed\n")
    cases["verify"] = ("verify", (), env)
    seen["verify"] = kiln("skills", "verify", env=env, cwd=project)
    cases["modified"] = ("modified locally", (), env)
    seen["modified"] = kiln("skills", "install", "acme/notes", "--yes", env=env, cwd=project)
    codes = documented_codes()
    for case, proc in seen.items():
        assert proc.returncode in codes, (case, proc.returncode, proc.stderr)
        assert cases[case][0] in codes[proc.returncode], (case, proc.returncode, proc.stderr)
    # the way to find an id is the command a CLI user has, not only the API's query
    assert "kiln skills search" in seen["no such skill"].stderr, seen["no such skill"].stderr


def test_an_unreachable_registry_named_in_settings_points_there(
    tmp_path: Path, project: Path
) -> None:
    """The registry URL may come from `registry` in `$KILN_HOME/settings.json`; the hint of an
    unreachable one named only `--registry` and `KILN_REGISTRY`, where the user never set it."""
    home = tmp_path / "home"
    home.mkdir()
    url = f"http://127.0.0.1:{free_port()}"
    (home / "settings.json").write_text(f'{{"registry": "{url}"}}')
    proc = kiln("skills", "search", "notes", env=cli_env(home), cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert f"cannot reach registry {url}" in proc.stderr
    assert "'registry' in $KILN_HOME/settings.json" in proc.stderr, proc.stderr
