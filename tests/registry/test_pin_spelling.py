"""A pinned key holds however the registry's URL is spelled, with real `kiln` processes.

Before: pins were looked up by the URL string with only trailing slashes dropped, so
`http://LOCALHOST:PORT` or `http://localhost:PORT:80`-style spellings of a pinned registry
found no pin, and an interactive install trusted whatever key the server sent on "first use":
a registry whose key had changed was refused under one spelling and trusted under another.
Scheme and host are case-insensitive and a default port is no port (RFC 3986), so the pin is
now looked up under that normal form.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.registry.conftest import (
    FIXTURES,
    LiveRegistry,
    cli_env,
    kiln,
    publish_skill,
    tree_snapshot,
)

OTHER_KEY = base64.b64encode(bytes(range(32))).decode()  # a well-formed key it does not sign with


@pytest.mark.parametrize(
    "spelling", ["http://LOCALHOST:{port}", "http://LocalHost:{port}/", "HTTP://localhost:{port}"]
)
def test_a_pin_is_found_under_another_spelling_of_the_url(
    live: LiveRegistry, tmp_path: Path, spelling: str
) -> None:
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    port = live.url.rsplit(":", 1)[1]
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = cli_env(home)
    pinned = kiln(
        "skills", "trust", f"http://localhost:{port}", "--key", OTHER_KEY, env=env, cwd=project
    )
    assert pinned.returncode == 0, pinned.stderr

    url = spelling.format(port=port)
    result = kiln(
        "skills", "install", "acme/brand-guidelines", "--registry", url, "--yes",
        env=env, cwd=project,
    )  # fmt: skip
    assert result.returncode != 0, result.stdout
    assert "was pinned" in result.stderr and len(result.stderr.strip().splitlines()) <= 2
    assert tree_snapshot(project) == {}
    pins = json.loads((home / "trusted_keys.json").read_text())
    assert [entry["publicKey"] for entry in pins.values()] == [OTHER_KEY]


def test_a_pin_saved_under_an_older_spelling_still_holds(
    live: LiveRegistry, tmp_path: Path
) -> None:
    """Pins written before URLs were normalized keep their key's spelling in the file."""
    publish_skill(live, FIXTURES / "brand-guidelines", "1.0.0")
    port = live.url.rsplit(":", 1)[1]
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    home.mkdir()
    entry = {"keyId": "ed25519:0000000000000000", "publicKey": OTHER_KEY}
    (home / "trusted_keys.json").write_text(json.dumps({f"http://LocalHost:{port}": entry}))
    result = kiln(
        "skills", "install", "acme/brand-guidelines", "--registry", f"http://localhost:{port}",
        "--yes", env=cli_env(home), cwd=project,
    )  # fmt: skip
    assert result.returncode != 0 and "was pinned" in result.stderr, result.stdout
    assert tree_snapshot(project) == {}
