"""Memory files as editors on every platform save them, through the real `kiln memory`: a file
in a legacy encoding, with Windows line ends, with a byte-order mark, and Markdown whose code
blocks hold lines that start with ``@`` (scoped npm packages, decorators)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def kiln(root: Path, kiln_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "memory", *args, "--root", str(root)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "KILN_HOME": str(kiln_home)},
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_adding_to_a_latin1_file_keeps_its_bytes(tmp_path: Path, kiln_home: Path) -> None:
    """Before, the whole file was decoded with replacement characters and written back: every
    accented letter of the user's notes became U+FFFD on the first `kiln memory add`."""
    old = "# Mémoire\n\n- Café: déployer le vendredi\n".encode("latin-1")
    (tmp_path / "KILN.md").write_bytes(old)
    assert kiln(tmp_path, kiln_home, "add", "run make test").returncode == 0
    assert (tmp_path / "KILN.md").read_bytes() == old + b"- run make test\n"


def test_adding_to_a_crlf_file_keeps_its_line_ends(tmp_path: Path, kiln_home: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"# Notes\r\n\r\n- use pnpm")
    assert kiln(tmp_path, kiln_home, "add", "run make test").returncode == 0
    data = (tmp_path / "AGENTS.md").read_bytes()
    assert data == b"# Notes\r\n\r\n- use pnpm\r\n- run make test\r\n"


def test_adding_to_a_utf16_file_keeps_it_utf16(tmp_path: Path, kiln_home: Path) -> None:
    """Windows PowerShell's `>` and older Notepad save UTF-16 with a byte-order mark."""
    (tmp_path / "KILN.md").write_bytes("# Notes\r\n- use pnpm\r\n".encode("utf-16"))
    assert kiln(tmp_path, kiln_home, "add", "run make test").returncode == 0
    text = (tmp_path / "KILN.md").read_bytes().decode("utf-16")
    assert text == "# Notes\r\n- use pnpm\r\n- run make test\r\n"
    shown = kiln(tmp_path, kiln_home, "show").stdout
    assert "- use pnpm\n- run make test" in shown and "\x00" not in shown


def test_a_byte_order_mark_neither_reaches_the_model_nor_hides_an_import(
    tmp_path: Path, kiln_home: Path
) -> None:
    """Notepad's UTF-8 byte-order mark sat in front of the first line: an ``@import`` there was
    not recognised (and U+FEFF went to the model)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "style.md").write_text("STYLE: four spaces")
    (tmp_path / "KILN.md").write_bytes(b"\xef\xbb\xbf@docs/style.md\r\n- second line\r\n")
    shown = kiln(tmp_path, kiln_home, "show").stdout
    assert "STYLE: four spaces" in shown and "\ufeff" not in shown, shown


def test_at_lines_inside_code_blocks_are_text_not_imports(tmp_path: Path, kiln_home: Path) -> None:
    """Claude Code does not evaluate imports inside code blocks; before, each ``@types/node``
    line of a fenced block was replaced by "@types/node not found"."""
    memory = (
        "Install the types:\n\n```sh\nnpm i -D \\\n@types/node\n```\n\n"
        "~~~python\n@dataclass\nclass Point: ...\n~~~\n"
    )
    (tmp_path / "KILN.md").write_text(memory)
    shown = kiln(tmp_path, kiln_home, "show").stdout
    assert "\n@types/node\n" in shown and "\n@dataclass\n" in shown, shown
    assert "not found" not in shown


def test_the_users_memory_kept_in_a_dotfiles_repository_imports_its_neighbours(
    tmp_path: Path, kiln_home: Path
) -> None:
    """GNU stow, chezmoi's symlink mode and home-manager make ~/.claude/CLAUDE.md a link into
    a dotfiles repository, and link each file beside it the same way. Before, every import of
    such a memory file was refused as "outside the folders memory may import from": a relative
    one was resolved from the dotfiles folder, and ~/.claude/style.md resolved there too."""
    home = tmp_path / "home"
    dots = home / "dotfiles" / "claude"
    dots.mkdir(parents=True)
    (home / ".claude").mkdir()
    (dots / "CLAUDE.md").write_text("USER-MEMORY\n@rules.md\n@~/.claude/style.md\n")
    (dots / "rules.md").write_text("RULES: small commits")
    (dots / "style.md").write_text("STYLE: four spaces")
    for name in ("CLAUDE.md", "rules.md", "style.md"):
        (home / ".claude" / name).symlink_to(dots / name)
    root = tmp_path / "repo"
    root.mkdir()
    # A repository still cannot reach through such a link: it reads Markdown the user keeps in
    # their agent folders only where the file really is there.
    (root / "KILN.md").write_text("@~/.claude/rules.md\n")
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "memory", "show", "--root", str(root)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "KILN_HOME": str(kiln_home), "HOME": str(home)},
    )  # fmt: skip
    user, project = proc.stdout.split('<memory level="project"')
    assert "RULES: small commits" in user and "STYLE: four spaces" in user, proc.stdout
    assert "RULES" not in project and "skipped" in project, proc.stdout


def test_codex_users_global_agents_md_is_loaded(tmp_path: Path, kiln_home: Path) -> None:
    """README: memory "like Claude Code and Codex". Claude Code's ~/.claude/CLAUDE.md was
    loaded, Codex's global ~/.codex/AGENTS.md (or $CODEX_HOME/AGENTS.md) was not."""
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "AGENTS.md").write_text("CODEX-GLOBAL: answer in French")
    root = tmp_path / "repo"
    root.mkdir()
    env = {**os.environ, "KILN_HOME": str(kiln_home), "HOME": str(home)}
    env.pop("CODEX_HOME", None)
    show = [sys.executable, "-m", "lsp_server", "memory", "show", "--root", str(root)]
    proc = subprocess.run(show, capture_output=True, text=True, timeout=60, env=env)
    assert '<memory level="user"' in proc.stdout and "CODEX-GLOBAL" in proc.stdout, proc.stdout
    other = tmp_path / "codex-home"
    other.mkdir()
    (other / "AGENTS.md").write_text("CODEX-HOME-VAR")
    proc = subprocess.run(
        show, capture_output=True, text=True, timeout=60, env={**env, "CODEX_HOME": str(other)}
    )
    assert "CODEX-HOME-VAR" in proc.stdout and "CODEX-GLOBAL" not in proc.stdout, proc.stdout


def test_an_import_inside_a_sentence_is_read_as_claude_code_reads_it(
    tmp_path: Path, kiln_home: Path
) -> None:
    """Claude Code's own example, "See @README.md for project overview", imported nothing: only
    a line holding the ``@path`` alone was an import. Words that name no file, e-mail addresses,
    code spans and paths outside the repository stay text or a note."""
    (tmp_path / "README.md").write_text("OVERVIEW: a calculator")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "style.md").write_text("STYLE: four spaces")
    (tmp_path / "CLAUDE.md").write_text(
        "See @README.md for project overview and @docs/style.md.\n"
        "Ask @kiln or mail a@docs/style.md; `@docs/style.md` is code.\n"
        "Never @/etc/passwd.\n"
    )
    shown = kiln(tmp_path, kiln_home, "show").stdout

    assert "overview and @docs/style.md.\nOVERVIEW: a calculator\nSTYLE: four spaces\n" in shown
    assert shown.count("STYLE: four spaces") == 1, shown
    assert "@/etc/passwd skipped: outside the folders memory may import from" in shown
    assert "root:" not in shown
