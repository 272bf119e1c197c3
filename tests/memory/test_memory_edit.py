"""`kiln memory edit` with the editors users really have configured, through the real process:
a missing one, one that fails, a path with a space, a blank setting, a memory file that is a
link out of the repository, and a `kiln memory add` (or a session's `remember`) landing while the
editor is open."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.child_signals import as_from_a_terminal
from tests.waiting import wait_until


def editor(path: Path, body: str) -> Path:
    """A Python script used as $EDITOR; it gets the file to edit as its last argument."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport sys, time\nfrom pathlib import Path\n{body}\n")
    path.chmod(0o755)
    return path


def run_edit(
    root: Path, kiln_home: Path, env: dict[str, str], *args: str, **popen: Any
) -> subprocess.Popen:
    full = {k: v for k, v in os.environ.items() if k not in ("VISUAL", "EDITOR")}
    full.update(KILN_HOME=str(kiln_home), **env)
    return subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "memory", "edit", "--root", str(root), *args],
        env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, **popen,
    )  # fmt: skip


def finished(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    return proc.returncode, err


def test_an_editor_that_cannot_start_or_fails_leaves_no_memory_file(
    tmp_path: Path, kiln_home: Path
) -> None:
    code, err = finished(run_edit(tmp_path, kiln_home, {"EDITOR": str(tmp_path / "no-such")}))
    assert code == 1 and len(err.strip().splitlines()) == 1 and "EDITOR" in err, err
    failing = editor(tmp_path / "bin" / "failing", "sys.exit(3)")
    code, err = finished(run_edit(tmp_path, kiln_home, {"VISUAL": str(failing)}))
    assert code == 1 and "exited with 3" in err, err
    # before, an empty "# Memory" KILN.md was left in the repository either way
    assert not (tmp_path / "KILN.md").exists()


def test_an_editor_path_with_a_space_and_a_blank_setting(tmp_path: Path, kiln_home: Path) -> None:
    spaced = editor(
        tmp_path / "My Tools" / "ed",
        "Path(sys.argv[-1]).write_text(Path(sys.argv[-1]).read_text() + '- from spaced\\n')",
    )
    code, err = finished(run_edit(tmp_path, kiln_home, {"EDITOR": str(spaced)}))
    assert code == 0, err
    assert "- from spaced" in (tmp_path / "KILN.md").read_text()
    # A blank VISUAL/EDITOR is unset, not an empty command: before, the memory file itself was
    # run as the command (a repository can ship an executable KILN.md).
    marker = tmp_path / "ran"
    (tmp_path / "KILN.md").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (tmp_path / "KILN.md").chmod(0o755)
    bindir = tmp_path / "fakebin"
    editor(bindir / "vi", "Path(sys.argv[-1]).write_text('- from vi\\n')")
    env = {"VISUAL": "  ", "EDITOR": " ", "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    code, err = finished(run_edit(tmp_path, kiln_home, env))
    assert code == 0 and not marker.exists(), err
    assert (tmp_path / "KILN.md").read_text() == "- from vi\n"


def test_a_memory_file_linked_out_of_the_repository_is_not_edited(
    tmp_path: Path, kiln_home: Path
) -> None:
    """`kiln memory add` refuses to write through such a link; edit opened the file it points at
    (the user's shell profile, say) as if it were the project's memory."""
    outside = tmp_path / "home" / ".bashrc"
    outside.parent.mkdir()
    outside.write_text("export PATH=$HOME/bin:$PATH\n")
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "KILN.md").symlink_to(outside)
    started = tmp_path / "started"
    ed = editor(tmp_path / "bin" / "ed", f"Path({str(started)!r}).touch()")
    code, err = finished(run_edit(root, kiln_home, {"EDITOR": str(ed)}))
    assert code != 0 and "outside the repository" in err and len(err.strip().splitlines()) == 1
    assert not started.exists()


def test_a_line_added_while_the_editor_is_open_is_kept(tmp_path: Path, kiln_home: Path) -> None:
    (tmp_path / "KILN.md").write_text("# Memory\n\n- old line\n")
    opened, release = tmp_path / "opened", tmp_path / "release"
    ed = editor(
        tmp_path / "bin" / "ed",
        f"target = Path(sys.argv[-1]); text = target.read_text()\n"
        f"Path({str(opened)!r}).touch()\n"
        f"while not Path({str(release)!r}).exists(): time.sleep(0.05)\n"
        "target.write_text(text.replace('- old line', '- old line, edited'))",
    )
    proc = run_edit(tmp_path, kiln_home, {"EDITOR": str(ed)})
    assert wait_until(opened.exists), "the editor never opened the file"
    add = subprocess.run(
        [sys.executable, "-m", "lsp_server", "memory", "add", "added meanwhile",
         "--root", str(tmp_path)],
        env={**os.environ, "KILN_HOME": str(kiln_home)}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert add.returncode == 0, add.stderr
    release.touch()
    code, err = finished(proc)
    assert code == 0, err
    # before, saving the editor's copy silently dropped the line added meanwhile
    assert (tmp_path / "KILN.md").read_text() == (
        "# Memory\n\n- old line, edited\n- added meanwhile\n"
    )
    assert stat.S_ISREG((tmp_path / "KILN.md").lstat().st_mode)


def test_writes_go_through_a_link_the_user_made(tmp_path: Path, kiln_home: Path) -> None:
    """A memory file kept in a dotfiles repository and linked into KILN_HOME, or a repository's
    KILN.md linked to a file inside it, is written where the link points. Before, `kiln memory
    add` replaced the link with a regular file, and the note never reached the dotfiles."""
    dots = tmp_path / "dotfiles" / "KILN.md"
    dots.parent.mkdir()
    dots.write_text("# Mine\n")
    kiln_home.mkdir(exist_ok=True)
    (kiln_home / "KILN.md").symlink_to(dots)
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "team.md").write_text("# Team\n")
    (root / "KILN.md").symlink_to(Path("docs") / "team.md")
    env = {**os.environ, "KILN_HOME": str(kiln_home)}
    for args in (["--user"], []):
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "memory", "add", "keep it short",
             "--root", str(root), *args],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    ed = editor(
        tmp_path / "bin" / "ed",
        "Path(sys.argv[-1]).write_text(Path(sys.argv[-1]).read_text() + '- edited\\n')",
    )
    code, err = finished(run_edit(root, kiln_home, {"EDITOR": str(ed)}, "--user"))
    assert code == 0, err
    assert (kiln_home / "KILN.md").is_symlink() and (root / "KILN.md").is_symlink()
    assert dots.read_text() == "# Mine\n- keep it short\n- edited\n"
    assert (root / "docs" / "team.md").read_text() == "# Team\n- keep it short\n"


def test_ctrl_c_in_the_editor_does_not_end_the_edit(tmp_path: Path, kiln_home: Path) -> None:
    """Ctrl-C reaches every process of the terminal's foreground group: vi takes it to cancel a
    command and goes on. Before, Kiln died of it ("kiln: aborted", exit 130) while the editor
    stayed open on the copy, and what was typed after it was never saved; Kiln now waits for the
    editor, as git does."""
    (tmp_path / "KILN.md").write_text("# Memory\n\n- old line\n")
    opened, release = tmp_path / "opened", tmp_path / "release"
    ed = editor(
        tmp_path / "bin" / "ed",
        "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        f"Path({str(opened)!r}).touch()\n"
        f"while not Path({str(release)!r}).exists(): time.sleep(0.05)\n"
        "target = Path(sys.argv[-1]); target.write_text(target.read_text() + '- typed after\\n')",
    )
    proc = run_edit(
        tmp_path, kiln_home, {"EDITOR": str(ed)},
        preexec_fn=as_from_a_terminal, start_new_session=True,
    )  # fmt: skip
    assert wait_until(opened.exists), "the editor never opened the file"
    os.killpg(proc.pid, signal.SIGINT)  # as the terminal sends Ctrl-C: to the whole group
    release.touch()
    code, err = finished(proc)
    assert code == 0, err
    assert (tmp_path / "KILN.md").read_text() == "# Memory\n\n- old line\n- typed after\n"
