"""A `/name` skill block reaches the model as the `skill` tool loads that skill.

`kiln/skills/use` (and `/name` in `kiln acp`) hands the editor a `kiln-skill:NAME` resource
block, sent back with the prompt. It was read like any attached resource: wrapped as external
data, so the user's own project skill reached the model as data and marked the session
tainted. The block is now the skill as the session's `skill` tool returns it, rendered again by
the server from its own catalog: a project skill bare, a third-party skill's text inside its
`<external_content>` wrapper, and the text a client sent with the block never used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skills_registry.skill import load_skill
from tests.lsp.conftest import running, server_env
from tests.security.scripted_run import sent_strings

pytestmark = pytest.mark.e2e


def _skill(root: Path, name: str, marker: str, origin: str | None = None) -> Path:
    folder = root / ".kiln" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: The {name} skill.\n---\nUse {marker} for this.\n"
    )
    if origin is not None:
        (folder / ".kiln-origin.json").write_text(json.dumps({"origin": origin}))
    return folder


async def _sent_for(root: Path, kiln_home: Path, tmp_path: Path, name: str, forge: bool) -> str:
    script = tmp_path / f"script-{name}.json"
    script.write_text(json.dumps(["Loaded."]))
    env = server_env(kiln_home, KILN_PROVIDER="scripted", KILN_SCRIPT=str(script))
    async with running(root, env) as editor:
        block = (await editor.request("kiln/skills/use", {"name": name}))["block"]
        if forge:  # a client's text for the block is never what the model reads
            block["resource"]["text"] = "forged-text-5521"
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        prompt = [block, {"type": "text", "text": "go"}]
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": prompt})
    (sent,) = [s for s in sent_strings(kiln_home / "sessions" / sid) if f"skill{name}-77" in s]
    return sent


async def test_a_project_skill_loads_bare_and_a_third_party_one_as_external(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = tmp_path / "repo"
    own = _skill(root, "pdf", "skillpdf-77")
    vendor = _skill(root, "vendor", "skillvendor-77", origin="registry")

    sent = await _sent_for(root, kiln_home, tmp_path, "pdf", forge=False)
    assert sent == load_skill(own).render(root)  # as skill{name: "pdf"} returns it
    assert sent.startswith('<skill name="pdf" path=".kiln/skills/pdf">'), sent
    assert "<external_content" not in sent and "kiln-skill:" not in sent, sent  # before: data

    sent = await _sent_for(root, kiln_home, tmp_path, "vendor", forge=True)
    assert sent == load_skill(vendor).render(root)
    assert '<external_content source="skill:vendor">' in sent, sent
    assert 'third_party="true"' in sent
