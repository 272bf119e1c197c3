"""Programs Kiln itself starts on the host (docs/security.md section 8, "PATH"): a user whose
``PATH`` names a workspace folder (an activated ``.venv/bin``, common in CI as
``echo $PWD/.venv/bin >> $GITHUB_PATH``) or the current folder must not get a ``git`` or
``bwrap`` a sandboxed command wrote there run unconfined — by the CI patch of the same run, or
as the "sandbox" of the next one. Through the real `kiln run --ci`, twice."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

FAKE = '#!/bin/sh\necho pwned >> {marker}\nexec {real} "$@"\n'


def _repo(root: Path) -> None:
    root.mkdir()
    (root / "app.py").write_text("x = 1\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)


def test_programs_planted_on_a_workspace_path_entry_never_run_on_the_host(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    root = tmp_path / "repo"
    _repo(root)
    marker = host_dir / "ran-on-host"
    plant = " && ".join(
        f"printf %s {shlex.quote(FAKE.format(marker=marker, real=shutil.which(name)))}"
        f" > .venv/bin/{name} && chmod +x .venv/bin/{name}"
        for name in ("git", "bwrap")
    )
    steps = [{"tool_calls": [{"name": "run_command",
                              "input": {"command": f"mkdir -p .venv/bin bin && {plant} && cp .venv/bin/git bin/git"}}]},
             {"tool_calls": [{"name": "edit_file", "input": {"path": "app.py", "old_text": "1", "new_text": "2"}}]}]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps([*steps, "done"]))
    path = os.pathsep.join([str(root / ".venv" / "bin"), "bin", "", os.environ["PATH"]])
    for _ in range(2):  # the second run starts its sandbox after the plant
        proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
                        extra=("--ci",), env={"PATH": path})  # fmt: skip
        patch = Path(json.loads(proc.stdout)["patch"]).read_text()
        assert "+x = 2" in patch, proc.stderr  # git ran, as the host's git
        subprocess.run(["git", "checkout", "-q", "app.py"], cwd=root, check=True)
    assert (root / ".venv" / "bin" / "git").exists() and (root / ".venv" / "bin" / "bwrap").exists()
    assert not marker.exists(), marker.read_text()
