"""A skill id with a look-alike letter typed or pasted into `kiln skills install` and `info`
(a real `kiln` process): the line says which letter is wrong. Before: `invalid skill id
'аcme/deploy'`, printed as is, which reads exactly like the valid `acme/deploy`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill, publish_skill


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("install", "\u0430cme/deploy", "--yes"),
         "kiln: invalid skill id '\\u0430cme/deploy': \\u0430 (CYRILLIC SMALL LETTER A) is not "
         "ASCII; registry ids are ASCII, so a letter that only looks Latin never names another "
         "skill (it reads as 'acme/deploy')"),
        (("info", "acme/d\u0435ploy"),
         "kiln: invalid skill id 'acme/d\\u0435ploy': \\u0435 (CYRILLIC SMALL LETTER IE)"),
        (("install", "Acme/deploy"), "kiln: invalid skill id 'Acme/deploy': ids are lowercase "
         "('acme/deploy')"),
        # names no registry accepts: refused here, not asked for (a 404 from the registry)
        (("info", "acme/deploy-"), "kiln: invalid skill id 'acme/deploy-': a namespace or name "
         "ends in a letter or digit"),
        (("install", "acme/" + "d" * 65, "--yes"), f"kiln: invalid skill id 'acme/{'d' * 65}': "
         "a namespace has at most 40 characters and a name at most 64"),
        (("info", "a" * 41 + "/deploy"), f"kiln: invalid skill id '{'a' * 41}/deploy': a "
         "namespace has at most 40 characters"),
        # an id a registry stored before its rules held (test_pre_rule_ids): the rule named
        (("install", "evil\n/deploy", "--yes"), "kiln: invalid skill id 'evil\\n/deploy': a "
         "namespace is lowercase a-z, digits and inner '-' (at most 40 characters), a name the "
         "same (at most 64)"),
    ],
)  # fmt: skip
def test_the_refusal_names_the_letter(tmp_path: Path, args: tuple[str, ...], line: str) -> None:
    env = cli_env(tmp_path / "home", KILN_REGISTRY="http://127.0.0.1:9")
    proc = kiln("skills", *args, env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(line), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.isascii()
    assert not (tmp_path / ".kiln").exists()


def test_a_search_with_a_look_alike_letter_shows_the_ascii_names(
    live: LiveRegistry, tmp_path: Path
) -> None:
    """Before: `no skills found` for `dеploy` (Cyrillic е, pasted from a page that wants the
    user to go looking elsewhere), beside a registry holding `acme/deploy`."""
    publish_skill(live, make_skill(tmp_path / "src", "deploy", "Deploy the app."), "1.0.0")
    env = cli_env(tmp_path / "home", KILN_REGISTRY=live.url)
    proc = kiln("skills", "search", "d\u0435ploy", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("acme/deploy@1.0.0  Deploy the app."), proc.stdout
    assert proc.stderr == (
        "kiln: nothing matches 'd\\u0435ploy': its \\u0435 (CYRILLIC SMALL LETTER IE) only "
        "looks Latin; showing 'deploy'\n"
    )
