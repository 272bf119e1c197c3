"""`kiln registry usage` and `kiln registry audit` only read a registry: pointed at a folder
(or SQLite file) that holds none, a mistyped `--data`, they say so in one line and exit 2, and
create nothing. Before, each created an empty registry there and carried on, reporting a
namespace with no usage and no writes as if that were the answer."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.registry.conftest import cli_env, kiln, ok


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (("registry", "usage", "acme", "--data", "mistyped"), "mistyped"),
        (("registry", "audit", "--data", "mistyped"), "mistyped"),
        (("registry", "audit", "--namespace", "acme"), "home/registry"),  # the default folder
        (("registry", "usage", "acme", "--db", "sqlite:///{tmp}/none.db"), "{tmp}/none.db"),
    ],
)
def test_a_read_only_command_on_no_registry_creates_nothing(
    tmp_path: Path, args: tuple[str, ...], where: str
) -> None:
    args = tuple(a.replace("{tmp}", str(tmp_path)) for a in args)
    work = tmp_path / "work"
    work.mkdir()
    result = kiln(*args, env=cli_env(tmp_path / "home"), cwd=work)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    lines = result.stderr.strip().splitlines()
    shown = where.replace("{tmp}", str(tmp_path)).replace("home/", f"{tmp_path}/home/")
    assert len(lines) == 1 and lines[0].startswith(f"kiln: no registry at {shown} ("), lines
    assert list(work.iterdir()) == [] and not (tmp_path / "home").exists()
    assert not (tmp_path / "none.db").exists()


def test_an_existing_registry_is_read(tmp_path: Path) -> None:
    """The refusal is for a missing registry only: one `token` made is one to read."""
    env = cli_env(tmp_path / "home")
    data = tmp_path / "data"
    ok(kiln("registry", "token", "--namespace", "acme", "--data", str(data), env=env, cwd=tmp_path))
    assert ok(kiln("registry", "audit", "--data", str(data), env=env, cwd=tmp_path)) == ""
    out = ok(kiln("registry", "usage", "acme", "--data", str(data), env=env, cwd=tmp_path))
    assert "namespace 'acme'" in out


def test_migrate_from_no_registry_creates_nothing(tmp_path: Path) -> None:
    """`migrate --from` a SQLite file that is not there (a typo) created an empty source and an
    empty target, then reported "0 skills: 0 versions copied"."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "key").write_text(base64.b64encode(bytes(range(32))).decode())
    result = kiln(
        "registry", "migrate", "--from", f"sqlite://{tmp_path}/none/registry.db",
        "--from-blobs", f"file://{tmp_path}/none/blobs", "--to", f"sqlite://{tmp_path}/dst.db",
        "--to-blobs", f"file://{tmp_path}/blobs", "--signing-key", "key",
        env=cli_env(tmp_path / "home"), cwd=work,
    )  # fmt: skip
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.startswith(f"kiln: no registry at {tmp_path}/none/registry.db ("), (
        result.stderr
    )
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert sorted(p.name for p in work.iterdir()) == ["key"]
