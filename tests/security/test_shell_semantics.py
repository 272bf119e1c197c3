"""The shell that runs a command line must read it as the check did (docs/security.md section 3).
The check parses with bash's grammar, but commands ran under `/bin/sh`, which is dash on Debian
and Ubuntu: `echo hi &>/dev/null rm -rf src` is one `echo` to bash and to the check, and to dash
an `echo` sent to the background followed by `>/dev/null rm -rf src`, so `rm` ran past a
`Bash(rm *)` deny rule in `ci`. Bash, for its part, runs a `$( )` written inside an array
subscript whenever it evaluates text as arithmetic or as a variable name at run time
(`$((x))`, `[[ $v -eq 1 ]]`, `test -v`, `printf -v`, `read`, `${!v}`, `let`, `declare -i`, an
array literal's key, `OPTIND=$v`, `RANDOM=$v`):
`bash -c "test -v 'a[\\$(rm -rf src)]'"` removed `src` the same way, and so did the commands bash
runs from a builtin's option or a prompt expansion (`mapfile -C CALLBACK`, `compgen -C`/`-W`,
`${x@P}`, `fc -s` running a history entry `history -s` wrote), and the
compound command of `coproc NAME { rm -rf src; }`, which the grammar reads as a command `NAME`.
A word the shell computes passed where the check reads what runs went past it too: the command
a wrapper starts (`X=rm; nice $X -rf src`, `env $'rm'`, `find -exec $'rm'`), a `git -c` key
(`$'alias.x=!rm -rf src'`), `git rebase "$X"` with `X=--exec=…`, a tar option, a sed script.
So did `env -S "rm -rf src"` with no word after the string, `script -qc SCRIPT` (flags run
together), the command `ssh-agent` or `dbus-run-session` starts, backticks in `${x:-`rm -rf src`}`
(the grammar reads them as a word), and bash's own tables of what a name runs, set as arrays: `BASH_CMDS=([ls]=/bin/rm); ls -rf
src` (the hash table) and `BASH_ALIASES`. Through the real
`kiln run --mode ci` and bubblewrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.test_command_disguises import checkout, run

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

PAYLOAD = "'a[$(rm -rf src)]'"
REMOVES_SRC = [
    "bash -c \"test -v 'a[\\$(rm -rf src)]'\"",
    f"x={PAYLOAD}; echo $((x))",
    f"x={PAYLOAD}; echo $[x]",
    f"v={PAYLOAD}; [[ $v -eq 1 ]]",
    f"v={PAYLOAD}; [[ v -lt 1 ]]",
    f"printf -v {PAYLOAD} x",
    f"read {PAYLOAD} <<< hi",
    f"test -v {PAYLOAD}",
    f"v={PAYLOAD}; echo ${{!v}}",
    f"v={PAYLOAD}; b=(1); echo ${{b[v]}}",
    f"v={PAYLOAD}; b=(1 2); echo ${{b[@]:v}}",
    f"let {PAYLOAD}",
    f"declare -i n; n={PAYLOAD}",
    f'v={PAYLOAD}; declare "$v=1"',
    f'v={PAYLOAD}; typeset -n r="$v"; echo $r',
    f"v={PAYLOAD}; for ((i=v; i<0; i++)); do :; done",
    "mapfile -C 'rm -rf src; :' -c 1 lines < src/main.py",
    "readarray -C 'rm -rf src; :' -c 1 lines < src/main.py",
    "x='$(rm -rf src)'; echo ${x@P}",
    "coproc NAME { rm -rf src; }; wait",
    "coproc (rm -rf src); wait",
    "coproc NAME while true; do rm -rf src; break; done; wait",
    "X=rm; nice $X -rf src",
    "env $'rm' -rf src",
    "find src -maxdepth 0 -exec $'rm' -rf {} +",
    "git -c $'alias.x=!rm -rf src' x",
    "X='--exec=rm -rf src'; git -c user.name=t -c user.email=t@t rebase \"$X\" HEAD",
    "C='rm -rf src'; tar -cf /dev/null --checkpoint=1 \"--checkpoint-action=exec=$C\" .",
    "B='b/;1e rm -rf src;s/c/d'; sed -n \"s/a/$B/\" src/main.py",
    f"v={PAYLOAD}; b=([v]=1)",
    f"v={PAYLOAD}; OPTIND=$v; getopts a x",
    f"v={PAYLOAD}; RANDOM=$v",
    "set -o history\nhistory -s 'rm -rf src'\nfc -s",
    'env -S "rm -rf src"',
    "script -qc 'cd src && rm -rf ../src' /dev/null",
    "ssh-agent sh -c 'cd src && rm -rf ../src'",
    "dbus-run-session -- sh -c 'cd src && rm -rf ../src'",
    "echo ${x:-`rm -rf src`}",
    "compgen -C 'rm -rf src' a",
    "compgen -W '$(rm -rf src)' a",
    "BASH_CMDS=([ls]=/bin/rm); ls -rf src",
    "bash -O expand_aliases -c 'BASH_ALIASES=([x]=\"rm -rf\")\nx src'",
]


@pytest.mark.parametrize("command", REMOVES_SRC)
def test_bash_runs_no_command_the_check_did_not_see(
    tmp_path: Path, kiln_home: Path, command: str
) -> None:
    home, root = checkout(tmp_path, kiln_home)
    results = run(tmp_path, kiln_home, home, root, command)
    assert (root / "src" / "main.py").exists(), results
    assert "permission denied" in results, results


@pytest.mark.parametrize(
    "command", ["echo hi &>/dev/null rm -rf src", "echo hi &>>x.log rm -rf src"]
)
def test_a_line_runs_as_bash_reads_it(tmp_path: Path, kiln_home: Path, command: str) -> None:
    """To bash (and to the check) `rm -rf src` is `echo`'s words, sent with its output away."""
    home, root = checkout(tmp_path, kiln_home)
    results = run(tmp_path, kiln_home, home, root, command)
    assert "exit code 0" in results, results
    assert (root / "src" / "main.py").exists(), results


def test_plain_arithmetic_and_status_tests_still_run(tmp_path: Path, kiln_home: Path) -> None:
    home, root = checkout(tmp_path, kiln_home)
    command = (
        "echo n=$((3 * 4 + 0x1f)); [[ $? -eq 0 ]] && echo status-$((1 + 1)); "
        'read -r first < src/main.py; echo "first=$first"; echo $((2 + 5))x &> out.log; '
        "cat out.log"
    )
    results = run(tmp_path, kiln_home, home, root, command)
    assert "n=43" in results and "status-2" in results, results
    assert "first=print('hi')" in results and "7x" in results, results
