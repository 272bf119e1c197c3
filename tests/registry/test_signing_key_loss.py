"""A lost signing key is never replaced without a word: `kiln registry key` and `serve`, real processes.

Every version a registry stores carries signatures made with its key, and every client that used
it pinned that key; a new key silently standing in for a lost one would leave all of them
unverifiable. So `key` creates a key only with `--new`, and `serve` over a database already
bound to a key refuses to start with a freshly made one.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from skills_registry.archive import build_archive, read_dir
from tests.registry.conftest import cli_env, kiln, make_skill, serving

KEY = Path("keys/ed25519.key")


def _fails_in_one_line(result, words: str, code: int = 2) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == code, (result.stdout, result.stderr)  # 2: configuration
    assert "Traceback" not in result.stderr
    assert words in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_key_is_created_only_with_new(tmp_path: Path) -> None:
    data, env = tmp_path / "data", cli_env(tmp_path / "home")
    missing = kiln("registry", "key", "--data", str(data), env=env, cwd=tmp_path)
    _fails_in_one_line(missing, "no signing key at")
    assert "--new" in missing.stderr
    assert not (data / KEY).exists()

    made = kiln("registry", "key", "--new", "--data", str(data), env=env, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("ed25519:")
    assert "created a new signing key" in made.stderr
    assert (data / KEY).stat().st_mode & 0o777 == 0o600

    again = kiln("registry", "key", "--new", "--data", str(data), env=env, cwd=tmp_path)
    _fails_in_one_line(again, "already exists", code=1)  # a refusal, not a mistake
    shown = kiln("registry", "key", "--data", str(data), env=env, cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout == made.stdout and shown.stderr == ""


def test_a_lost_key_is_not_replaced_by_serve_nor_by_key(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    env = cli_env(home)
    token = kiln("registry", "token", "--data", str(data), "--namespace", "acme",
                 env=env, cwd=tmp_path).stdout.strip()  # fmt: skip
    with serving(data, tmp_path / "server-home") as port:
        archive = build_archive(read_dir(make_skill(tmp_path / "src", "notes")))
        put = httpx.put(
            f"http://127.0.0.1:{port}/v1/skills/acme/notes/versions/1.0.0",
            content=archive,
            headers={"Authorization": f"Bearer {token}"},
        )
        assert put.status_code == 201, put.text
    (data / KEY).unlink()  # the key is lost; the database still holds versions signed with it

    shown = kiln("registry", "key", "--data", str(data), env=env, cwd=tmp_path)
    _fails_in_one_line(shown, "no signing key at")
    assert not (data / KEY).exists()

    served = kiln("registry", "serve", "--port", "0", "--data", str(data), env=env, cwd=tmp_path)
    _fails_in_one_line(served, "restore it from a backup")
    assert not (data / KEY).exists()  # no stray new key for `key` to print later

    made = kiln("registry", "key", "--new", "--data", str(data), env=env, cwd=tmp_path)
    _fails_in_one_line(made, "is signed with ed25519:")
    assert not (data / KEY).exists()
