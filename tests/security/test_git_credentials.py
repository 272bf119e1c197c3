"""The token `actions/checkout` leaves in `.git/config` (docs/security.md section 8): in
`kiln run --ci` the agent reads the config with a file tool, with a command, reversed and
base64-encoded by a command, and copies it into the change — the token shows up in no tool
result, transcript, answer, patch, summary or commit, in no spelling. The config commands see
has it blanked; what the Kiln process reads is redacted."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import committing_repo, git
from tests.security.hostile import everything_written
from tests.security.scripted_run import kiln_run, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

TOKEN = "ghs_CanaryToken0123456789abcdefXYZ"


def call(name: str, **args: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "input": args}]}


@pytest.mark.parametrize("layout", ["v4", "v6"])
def test_a_checkouts_token_in_git_config_never_leaves(
    tmp_path: Path, kiln_home: Path, host_dir: Path, layout: str
) -> None:
    """v4 writes the header into `.git/config`; v6 into a file under `$RUNNER_TEMP` that
    `.git/config` includes for this git folder (`includeIf.gitdir:…`)."""
    root = tmp_path / "repo"
    committing_repo(root)("init", {"calc.py": "def add(a, b):\n    return a - b\n"})
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    header = f"AUTHORIZATION: basic {basic}"
    if layout == "v4":
        git(root, "config", "http.https://github.com/.extraheader", header)
    else:  # the runner's temp folder is not under /tmp
        credentials = host_dir / "git-credentials-1234.config"
        credentials.write_text(f'[http "https://github.com/"]\n\textraheader = {header}\n')
        git(root, "config", f"includeIf.gitdir:{root}/.git/.path", str(credentials))
    git(root, "config", "remote.origin.url", f"https://kiln-bot:{TOKEN}@github.com/o/r.git")
    steps = [
        call("read_file", path=".git/config"),
        call("grep", pattern="extraheader", path=".git"),
        call(
            "run_command",
            command=f"cat .git/config {host_dir}/*.config; "
            "git config --get-regexp 'extraheader|url'",
        ),
        call(
            "run_command",
            command=f"cat .git/config {host_dir}/*.config | rev; "
            f"cat .git/config {host_dir}/*.config | base64 -w0",
        ),
        call("run_command", command=f"cat .git/config {host_dir}/*.config > leak.txt"),
        call("edit_file", path="calc.py", old_text="a - b", new_text="a + b"),
        {"text": f"Done. For the record: {basic} {TOKEN}"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    artifacts = tmp_path / "artifacts"
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
        extra=("--ci", "--commit-branch", "kiln/fix", "--artifacts", str(artifacts)),
    )  # fmt: skip
    result = json.loads(proc.stdout)
    assert result["branch"] == "kiln/fix", proc.stderr
    assert (root / "leak.txt").exists(), tool_results(Path(result["transcript"]))  # made, blanked
    config = (root / ".git" / "config").read_text() + "".join(
        p.read_text() for p in host_dir.glob("*.config")
    )
    assert basic in config and TOKEN in config  # the host's files are untouched
    seen = "\n".join([proc.stdout, proc.stderr, everything_written(artifacts),
                      (root / "leak.txt").read_text(),
                      subprocess.run(["git", "log", "-p", "--all"], cwd=root, capture_output=True,
                                     text=True).stdout])  # fmt: skip
    decoded = [  # what `base64 .git/config` printed, decoded
        base64.b64decode(run[: len(run) // 4 * 4]).decode(errors="replace")
        for run in re.findall(r"[A-Za-z0-9+/]{200,}", seen)
    ]
    forms = {"token": TOKEN, "basic": basic, "reversed token": TOKEN[::-1],
             "reversed basic": basic[::-1]}  # fmt: skip
    seen += "\n".join(decoded)
    leaked = {name for name, form in forms.items() if form in seen}
    assert not leaked, f"the checkout's token left in these forms: {sorted(leaked)}"
    assert "[REDACTED:GIT_EXTRAHEADER]" in seen  # what read_file showed
