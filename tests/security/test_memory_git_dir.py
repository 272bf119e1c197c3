"""Memory never reads the repository's git folder (docs/security.md sections 6b and 8), through
the real `kiln run --ci`. `actions/checkout` leaves the job's token in `.git/config`; the tools
never show it to the model (commands see the config blanked, what Kiln reads is redacted), but
a pull request's `KILN.md` holding `@.git/config` sent it to the model provider with the first
request: the model then knew it and could write it, in any spelling, into the change."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.repos import committing_repo, git
from tests.security.scripted_run import kiln_run

TOKEN = "ghs_MemoryCanary0123456789abcdefXYZ"


def ci_run(
    root: Path, tmp_path: Path, kiln_home: Path, steps: list[Any]
) -> tuple[subprocess.CompletedProcess[str], str]:
    """`kiln run --ci` in ``root`` with a scripted model, and every request it sent."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
                    extra=("--ci", "--artifacts", str(tmp_path / "art")))  # fmt: skip
    sent = "\n".join(p.read_text(errors="replace") for p in kiln_home.rglob("*.jsonl"))
    return proc, sent


def test_a_memory_import_of_the_git_config_is_refused(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    committing_repo(root)("init", {
        "KILN.md": "Notes.\n@.git/config\n@docs/style.md\n",
        "docs/style.md": "STYLE: four spaces\n",
        "docs/AGENTS.md": "@../.git/config\n",  # a subfolder's memory, loaded on first touch
    })  # fmt: skip
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    git(root, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {basic}")
    read = {"tool_calls": [{"name": "read_file", "input": {"path": "docs/style.md"}}]}
    proc, sent = ci_run(root, tmp_path, kiln_home, [read, "done"])
    assert "STYLE: four spaces" in sent, proc.stderr  # the control: memory was sent
    assert TOKEN not in sent and basic not in sent and "extraheader" not in sent
    assert "git folder" in sent


def test_the_git_folder_in_another_case_is_the_git_folder(tmp_path: Path, kiln_home: Path) -> None:
    """On a case-insensitive filesystem (a macOS runner's APFS) `@.GIT/config` opens the git
    folder's config, and its spelling kept no `.git` in the path memory checked. Here the git
    folder is spelled `.GIT` (a `.git` file names it), which is the path that import reads."""
    root = tmp_path / "repo"
    committing_repo(root)("init", {"KILN.md": "Notes.\n@.GIT/config\n"})
    (root / ".git").rename(root / ".GIT")
    (root / ".git").write_text("gitdir: .GIT\n")
    git(root, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: bearer {TOKEN}")
    proc, sent = ci_run(root, tmp_path, kiln_home, ["done"])
    assert "Notes." in sent, proc.stderr  # the control: memory was sent
    assert TOKEN not in sent and "extraheader" not in sent
    assert "git folder" in sent


def test_a_git_folder_under_another_name_is_a_git_folder(tmp_path: Path, kiln_home: Path) -> None:
    """`git init --separate-git-dir .repo` (or `git worktree`, a bare mirror kept in the tree)
    puts the git folder under a name with no `.git` in it: `@.repo/config` read it. A folder
    git itself would take for a git folder (HEAD, objects/, refs/) is refused by what it is."""
    root = tmp_path / "repo"
    committing_repo(root)("init", {"KILN.md": "Notes.\n@.repo/config\n@.repo/../docs.md\n"})
    (root / ".git").rename(root / ".repo")
    (root / ".git").write_text("gitdir: .repo\n")
    (root / "docs.md").write_text("DOCS: kept\n")
    git(root, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: bearer {TOKEN}")
    proc, sent = ci_run(root, tmp_path, kiln_home, ["done"])
    assert "Notes." in sent and "DOCS: kept" in sent, proc.stderr  # the controls
    assert TOKEN not in sent and "extraheader" not in sent
    assert "git folder" in sent
