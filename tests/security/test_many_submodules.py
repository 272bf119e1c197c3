"""Kiln's own git calls after `kiln run --ci` (docs/security.md section 8) in a checkout with
more populated submodules than Kiln looks into. `git status` runs git inside every populated
submodule whose files changed, under that submodule's config; Kiln switched off the filter drivers
of the first 64 nested repositories' configs only, and the sandbox keeps read-only the configs of
the first 50 and of those its walk of `.git/modules` reaches (200 folders, which a command can
fill with empty ones). So in a checkout of 65 submodules, a command planted a clean filter in the
last one's config, and Kiln's `git status` ran it on the host. Kiln's calls now never look inside
a submodule: a changed submodule commit is still a change, its work tree's edits are not."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import git
from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

COUNT = 65


def checkout(tmp: Path) -> Path:
    lib = tmp / "lib"
    lib.mkdir()
    (lib / "f.txt").write_text("lib\n")
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@e",
                                                "commit", "-qm", "lib"]):  # fmt: skip
        git(lib, *args)
    root = tmp / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "app.py").write_text("x = 1\n")
    for i in range(COUNT):  # as actions/checkout with `submodules: true` leaves them
        git(
            root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), f"s{i:02}"
        )
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    return root


def python(code: str) -> dict[str, object]:
    command = f"python3 -c {shlex.quote(code)}"
    return {"tool_calls": [{"name": "run_command", "input": {"command": command}}]}


def test_kilns_git_calls_do_not_enter_a_submodule_past_the_ones_looked_into(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    root = checkout(tmp_path)
    last = f"s{COUNT - 1:02}"
    marker = host_dir / "filter-ran"
    flood = (  # empty folders the sandbox's walk of .git/modules spends itself on
        "import os\n"
        "for i in range(100):\n"
        "    os.makedirs('.git/modules/z%03d/' % i + '/'.join(['d'] * 200))\n"
    )
    plant = (
        f"open('.git/modules/{last}/config', 'a').write("
        f"'[filter \"ev\"]\\n\\tclean = touch {marker}; cat\\n')\n"
        f"open('{last}/.gitattributes', 'w').write('* filter=ev\\n')\n"
        f"import os; os.utime('{last}/f.txt', (1893456000, 1893456000))\n"
    )
    script = tmp_path / "script.json"
    edit = {
        "tool_calls": [{"name": "write_file", "input": {"path": "app.py", "content": "x = 2\n"}}]
    }
    script.write_text(json.dumps([python(flood), python(plant), edit, "done"]))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
                    extra=("--ci", "--commit-branch", "kiln/many"), timeout=300)  # fmt: skip
    assert 'filter "ev"' in (root / ".git" / "modules" / last / "config").read_text()  # planted
    assert not marker.exists(), "a submodule's filter ran on the host"
    result = json.loads(proc.stdout)
    assert proc.returncode == 10, proc.stderr  # changed, no --verify
    assert result["branch"] == "kiln/many"  # the run's own change still goes out
    assert git(root, "show", "--name-only", "--format=", "kiln/many").split() == ["app.py"]
