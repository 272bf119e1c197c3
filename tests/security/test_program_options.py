"""Programs that run a command line named in their options, and wrappers that start a command,
which the check did not know (docs/security.md section 3). Each line below ran `rm -rf src`
through the real `kiln run --mode ci` although the user's settings deny `rm`:
`git grep --open-files-in-pager` and `git archive --remote=. --exec` run their value through the
shell; util-linux's `setarch` (and `linux64`, `x86_64`…), `choom` and `numactl` start the command
after their own options; and `git --git-dir=vendor/evil` or `git --bare` take a folder the
checkout ships shaped like a repository as the repository, explicitly, so the
`core.fsmonitor` of its `config` ran (`safe.bareRepository=explicit` allows an explicit one).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.permission_rules import Rules
from agent.permissions import Permissions
from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

DENY = ["Bash(rm *)"]
REMOVES_SRC = [
    "git grep --open-files-in-pager='rm -rf src; true' print",
    "git grep -O'rm -rf src; true' print",
    "git archive --remote=. --exec='rm -rf src; exit 1' HEAD",
    'setarch "$(uname -m)" rm -rf src',
    "choom -n 0 -- rm -rf src",
    "git --git-dir=vendor/evil --work-tree=. status",
    "git -C vendor/evil --bare --work-tree=../.. status",
]


def checkout(tmp_path: Path, kiln_home: Path) -> tuple[Path, Path]:
    """A repository that ships `vendor/evil`, shaped like a bare repository whose config names
    a file-system monitor."""
    home = tmp_path / "home"
    root = home / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    evil = root / "vendor" / "evil"
    for folder in ("objects", "refs"):
        (evil / folder).mkdir(parents=True)
        (evil / folder / ".keep").write_text("")
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    (evil / "config").write_text(
        '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "rm -rf src; false"\n'
    )
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": {"deny": DENY}}))
    return home, root


@pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")
@pytest.mark.parametrize("command", REMOVES_SRC)
def test_a_command_a_program_runs_is_still_refused(
    tmp_path: Path, kiln_home: Path, command: str
) -> None:
    home, root = checkout(tmp_path, kiln_home)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
    ))  # fmt: skip
    proc = kiln_run(
        root, home=home, kiln_home=kiln_home, script=script, mode="ci", output="stream-json"
    )
    results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
    assert (root / "src" / "main.py").exists(), results
    assert "permission denied" in results, results


@pytest.mark.parametrize(
    "line",
    ["rg --pre rm TODO src", "zip -T -TT 'rm -rf src' x.zip f",
     "git send-email --to-cmd='rm -rf src' x.patch", "git fetch-pack --upload-pack=rm .",
     "numactl -N 0 rm -rf src", "linux64 rm -rf src", "perf stat -e cycles rm -rf src",
     "tmux new-session -d 'rm -rf src'", "rg TODO *", "sed -n p *",
     "git -c gpg.format=ssh -c gpg.ssh.defaultKeyCommand='rm -rf src' commit -S -m x",
     "git -c trace2.eventTarget=config/x.yml status"],
)  # fmt: skip
def test_programs_that_run_what_their_options_name(tmp_path: Path, line: str) -> None:
    """Where the program is not installed here (ripgrep), or needs a terminal, the check."""
    ci = Permissions("ci", Rules(deny=DENY), tmp_path)
    assert ci.check("run_command", {"command": line}).verdict == "deny", line


def test_an_allowed_search_does_not_run_the_checkouts_script(tmp_path: Path) -> None:
    """The user allows searching and sorting; the program a search option names is the
    checkout's script, and asks like any other."""
    allow = ["Bash(rg *)", "Bash(git grep *)", "Bash(sort *)", "Bash(tar *)", "Bash(git status)"]
    ask = Permissions("ask", Rules(allow=allow), tmp_path)
    for line in ("rg --pre=./tools/pre.sh TODO", "git grep -O./tools/pre.sh TODO",
                 "sort -S 1K --compress-program=./tools/c.sh data.txt", "tar -cf /tmp/x.tar *",
                 "git --git-dir=vendor/evil status"):  # fmt: skip
        assert ask.check("run_command", {"command": line}).verdict == "ask", line
    for line in ("rg TODO src", "git grep TODO", "tar -cf /tmp/x.tar src/*", "git status"):
        assert ask.check("run_command", {"command": line}).verdict == "allow", line
    mine = ask.check("run_command", {"command": "git --git-dir=.git status"})
    assert "not understood" not in mine.reason
