"""`kiln skills yank|deprecate` take KILN_REGISTRY_TOKEN, as publish, tokens and audit do.

Before, both ignored the variable and answered 401 in a CI that set it (only `--token` or a
stored login worked). Real `kiln` processes against a live registry.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill, publish_skill


def test_yank_and_deprecate_use_the_token_variable(registry: LiveRegistry, tmp_path: Path) -> None:
    token = registry.token("acme")
    publish_skill(registry, make_skill(tmp_path, "notes"), "1.0.0")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url, KILN_REGISTRY_TOKEN=token)

    for args, words in [
        (("yank", "acme/notes@1.0.0", "--reason", "bad"), "acme/notes@1.0.0 is now yanked"),
        (("yank", "acme/notes@1.0.0", "--undo"), "acme/notes@1.0.0 is now active"),
        (("deprecate", "acme/notes", "--message", "use acme/memo"), "acme/notes: deprecated"),
        (("usage",), "versions per skill 1 (acme/notes) of 1000"),  # as docs/registry.md lists
    ]:
        run = kiln("skills", *args, env=env, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert words in run.stdout
    skill = httpx.get(f"{registry.url}/v1/skills/acme/notes").json()
    assert skill["deprecated"] == "use acme/memo"

    # --token still wins over the variable
    wrong = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url, KILN_REGISTRY_TOKEN="kiln_x")
    run = kiln(
        "skills", "deprecate", "acme/notes", "--undo", "--token", token, env=wrong, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert httpx.get(f"{registry.url}/v1/skills/acme/notes").json()["deprecated"] is None
