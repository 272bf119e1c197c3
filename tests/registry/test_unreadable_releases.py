"""A release whose archive a newer archive rule refuses (published before the rule held, here
folders that differ only by case) stays in the registry. No client installs it, and the
marketplace leaves it out: served, printed and exported, with the rest of the skills there.
Before, such an archive made every request for the served marketplace a 422, unpacked again
on each one, and `kiln registry marketplace` failed whole."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.registry.conftest import FIXTURES, LiveRegistry, cli_env, kiln, publish_skill
from tests.registry.test_hostile_members import CASES, plant


def test_the_marketplace_leaves_out_a_release_the_rules_now_refuse(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    publish_skill(registry, FIXTURES / "brand-guidelines", "1.0.0")
    builder, words = CASES["case-folders"]
    plant(registry, "acme/evil", "1.0.0", builder(), "0" * 64)
    for _ in range(2):
        served = httpx.get(f"{registry.url}/.claude-plugin/marketplace.json")
        assert served.status_code == 200, served.text
        assert [p["kiln"]["id"] for p in served.json()["plugins"]] == ["acme/brand-guidelines"]

    env = cli_env(tmp_path / "home")
    warning = (
        "kiln: warning: 1 latest release(s) break the archive rules (published before they "
        f"held): acme/evil@1.0.0 ({words}"
    )
    printed = kiln("registry", "marketplace", "--data", str(registry.data), "--base-url",
                   registry.url, env=env, cwd=tmp_path)  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    assert [p["kiln"]["id"] for p in json.loads(printed.stdout)["plugins"]] == [
        "acme/brand-guidelines"
    ]
    assert printed.stderr.startswith(warning) and printed.stderr.count("\n") == 1
    out = tmp_path / "market"
    exported = kiln("registry", "marketplace", "--data", str(registry.data), "--base-url",
                    registry.url, "--out", str(out), env=env, cwd=tmp_path)  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == f"wrote 1 skills to {out}\n" and exported.stderr.startswith(warning)
    assert sorted(p.name for p in (out / "skills" / "acme").iterdir()) == ["brand-guidelines"]
    market = json.loads((out / ".claude-plugin" / "marketplace.json").read_text())
    assert [p["kiln"]["id"] for p in market["plugins"]] == ["acme/brand-guidelines"]
