"""A namespace is lowercase `a-z`, digits and inner `-`, at most 40 characters (docs/registry.md,
Publish rules), and every command and endpoint that takes one holds that rule to the last byte;
a token id is `tok_` and 12 hex digits, and the commands that revoke one say so.

Real `kiln registry` processes over a temp data folder and a real registry on a loopback port.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from skills_registry.archive import build_archive, read_dir
from tests.registry.conftest import LiveRegistry, cli_env, fails, kiln, make_skill


def test_a_trailing_newline_is_no_namespace_and_no_name(tmp_path: Path, live: LiveRegistry) -> None:
    """`^…$` let `evil\\n` through (`$` matches before a final newline): a token was issued for
    it, published `evil\\n/x`, and the publish's answer broke on its `Location` header."""
    env, data = cli_env(tmp_path / "home"), tmp_path / "data"
    made = kiln("registry", "token", "--data", str(data), "--namespace", "evil\n",
                env=env, cwd=tmp_path)  # fmt: skip
    fails(made, 2, "invalid namespace 'evil\\n'")
    assert not data.exists()  # refused before a registry is made

    archive = build_archive(read_dir(make_skill(tmp_path / "skills", "x")))
    headers = {"Authorization": f"Bearer {live.token('acme')}"}
    answer = httpx.put(f"{live.url}/v1/skills/acme/x%0A/versions/1.0.0", content=archive,
                       headers=headers)  # fmt: skip
    assert answer.status_code == 422, answer.text
    assert "invalid skill name 'x\\n'" in answer.json()["error"]["message"]


def test_usage_refuses_what_is_no_namespace_before_reading(tmp_path: Path) -> None:
    """`kiln skills usage a/b` said `kiln: Not Found`; `kiln registry usage ACME` printed zeros
    for a namespace no registry can hold, and over a mistyped `--data` created a registry."""
    env, data = cli_env(tmp_path / "home"), tmp_path / "data"
    for namespace in ("ACME", "a/b", "", "caf\u00e9", "acme\n"):
        told = kiln("skills", "usage", namespace, "--registry", "http://127.0.0.1:9",
                    "--token", "kiln_x", env=env, cwd=tmp_path)  # fmt: skip
        fails(told, 2, "invalid namespace")
        read = kiln("registry", "usage", namespace, "--data", str(data), env=env, cwd=tmp_path)
        fails(read, 2, "invalid namespace")
    fails(kiln("registry", "usage", "acme", "--data", str(data), env=env, cwd=tmp_path), 2,
          "no registry at")  # fmt: skip
    assert not data.exists()


def test_revoking_what_is_no_token_id_says_so(tmp_path: Path, live: LiveRegistry) -> None:
    """`kiln skills tokens --revoke ../x` said `kiln: Not Found` (the path left /v1/tokens/), and
    an unknown id's hint named `token list`, an operator command an author does not have."""
    env, data = cli_env(tmp_path / "home"), tmp_path / "data"
    token = live.token("acme")
    for bad in ("../x", "tok_", "TOK_0123456789ab", "tok_0123456789ab\n"):
        told = kiln("skills", "tokens", "--revoke", bad, "--registry", live.url, "--token", token,
                    env=env, cwd=tmp_path)  # fmt: skip
        fails(told, 2, "invalid token id")
        fails(kiln("registry", "token", "revoke", bad, "--data", str(data), env=env, cwd=tmp_path),
              2, "invalid token id")  # fmt: skip
    assert not data.exists()
    unknown = kiln("skills", "tokens", "--revoke", "tok_000000000000", "--registry", live.url,
                   "--token", token, env=env, cwd=tmp_path)  # fmt: skip
    fails(unknown, 1, "no token 'tok_000000000000' (`kiln skills tokens`")
