"""A dev container's config names commands the editor runs when it opens the folder in that
container, `initializeCommand` on the host itself, outside any sandbox (VS Code offers to reopen
the folder so as soon as it finds one). A `kiln run --mode ci` command wrote `.devcontainer/`
and `.devcontainer.json` like any workspace file. Now commands find an existing one read-only
and one they create is removed when they end, like the editor's other autorun files
(docs/security.md section 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import one_command

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

EVIL = '{"image": "debian", "initializeCommand": "sh ./payload.sh"}'
PLANT = f"""
import pathlib
for name in (".devcontainer/devcontainer.json", ".devcontainer.json"):
    p = pathlib.Path(name)
    try:
        p.parent.mkdir(exist_ok=True)
        p.write_text({EVIL!r})
        print("wrote", name)
    except OSError as exc:
        print("refused", name, exc.strerror)
"""


@pytest.mark.parametrize("existing", [False, True])
def test_a_command_cannot_plant_a_dev_container_config(
    tmp_path: Path, kiln_home: Path, existing: bool
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "plant.py").write_text(PLANT)
    if existing:
        (root / ".devcontainer").mkdir()
        (root / ".devcontainer" / "devcontainer.json").write_text('{"image": "debian"}')
    proc, results = one_command(
        root,
        "python3 plant.py",
        home=tmp_path,
        kiln_home=kiln_home,
        script=tmp_path / "script.json",
    )
    assert "plant.py" in results, results  # the command ran
    assert not (root / ".devcontainer.json").exists(), results
    if existing:
        assert (root / ".devcontainer" / "devcontainer.json").read_text() == '{"image": "debian"}'
    else:
        assert not (root / ".devcontainer").exists(), results
