"""A read deny rule covers what memory reads (docs/security.md sections 3 and 6b), through the
real `kiln run` and `kiln memory show`. Memory goes to the model provider when a session starts,
before anything is asked: before, a repository's `KILN.md` holding `@.env` sent the `.env` the
user made in their checkout, though their `Read(.env)` rule refuses it to every tool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.security.scripted_run import kiln_run_json

SECRET = "OPENAI_API_KEY=sk-canary-0d4f"


def repository(tmp_path: Path, kiln_home: Path) -> Path:
    (kiln_home / "settings.json").write_text('{"permissions": {"deny": ["Read(.env)"]}}')
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "KILN.md").write_text("Project notes.\n@.env\n@docs/style.md\n")
    (root / "docs").mkdir()
    (root / "docs" / "style.md").write_text("STYLE: four spaces")
    (root / ".env").write_text(SECRET + "\n")
    return root


def test_a_memory_import_a_deny_rule_covers_is_not_sent(tmp_path: Path, kiln_home: Path) -> None:
    root = repository(tmp_path, kiln_home)
    proc, out = kiln_run_json(root, [], home=tmp_path / "home", kiln_home=kiln_home,
                              script=tmp_path / "s.json")  # fmt: skip
    first = json.loads(Path(out["transcript"]).read_text().splitlines()[0])
    sent = json.dumps(first)
    assert "STYLE: four spaces" in sent  # the control: memory was loaded
    assert "sk-canary" not in sent and "read deny rule" in sent, sent
    stored = "\n".join(p.read_text(errors="replace") for p in kiln_home.rglob("*") if p.is_file())
    assert "sk-canary" not in stored + proc.stdout + proc.stderr


def test_kiln_memory_show_applies_the_rule_too(tmp_path: Path, kiln_home: Path) -> None:
    root = repository(tmp_path, kiln_home)
    (root / "CLAUDE.md").symlink_to(".env")  # the memory file itself, covered by the rule
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "memory", "show", "--root", str(root)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "KILN_HOME": str(kiln_home), "HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "STYLE: four spaces" in proc.stdout and "sk-canary" not in proc.stdout, proc.stdout
