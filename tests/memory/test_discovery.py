"""Memory discovery like Claude Code and Codex: from the repository root down to the
workspace, nearest AGENTS.md, user-level ~/.claude/CLAUDE.md, CLAUDE.local.md, imports kept
inside allowed folders; and `kiln run` from a subdirectory works in the repository root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.memory import Memory
from agent.testing.wire_server import WireServer
from tests.repos import git

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY MATERIAL")
    monkeypatch.setenv("HOME", str(home))
    return home


def repo_with_levels(base: Path) -> tuple[Path, Path]:
    repo = base / "repo"
    sub = repo / "services" / "api"
    sub.mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "CLAUDE.md").write_text("ROOT-CLAUDE")
    (repo / "AGENTS.md").write_text("ROOT-AGENTS")
    (repo / "services" / "KILN.md").write_text("MID-KILN")
    (repo / "services" / "AGENTS.md").write_text("MID-AGENTS")
    (sub / "CLAUDE.md").write_text("API-CLAUDE")
    (sub / "CLAUDE.local.md").write_text("API-LOCAL")
    return repo, sub


def test_walks_from_the_repository_root_nearest_agents_wins(
    tmp_path: Path, home: Path, kiln_home: Path
) -> None:
    repo, sub = repo_with_levels(tmp_path)
    (home / ".claude" / "CLAUDE.md").write_text("USER-CLAUDE")
    text = "\n".join(Memory(sub, kiln_home, user_home=home).initial_blocks())
    order = ["USER-CLAUDE", "ROOT-CLAUDE", "MID-KILN", "MID-AGENTS", "API-CLAUDE", "API-LOCAL"]
    assert [text.index(t) for t in order] == sorted(text.index(t) for t in order)
    assert "ROOT-AGENTS" not in text  # nearest AGENTS.md wins; the farther one is named
    assert f"it takes precedence over {repo / 'AGENTS.md'}" in text
    # without a repository, only the workspace level
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "AGENTS.md").write_text("ALONE")
    assert "ALONE" in "\n".join(Memory(alone, kiln_home, user_home=home).initial_blocks())


def test_imports_stay_inside_allowed_folders(tmp_path: Path, home: Path, kiln_home: Path) -> None:
    repo, _ = repo_with_levels(tmp_path)
    outside = tmp_path / "elsewhere.md"
    outside.write_text("OUTSIDE-TEXT")
    (home / ".claude" / "personal.md").write_text("PERSONAL-PREFS")
    (repo / "docs").mkdir()
    (repo / "docs" / "style.md").write_text("STYLE\n@../../elsewhere.md")
    (repo / "link.md").symlink_to(home / ".ssh" / "id_rsa")
    (repo / "KILN.md").write_text(
        "@~/.ssh/id_rsa\n@docs/style.md\n@~/.claude/personal.md\n@link.md\n@/etc/hostname\n"
    )
    text = "\n".join(Memory(repo, kiln_home, user_home=home).initial_blocks())
    assert "PRIVATE KEY MATERIAL" not in text and "OUTSIDE-TEXT" not in text
    assert "PERSONAL-PREFS" in text and "STYLE" in text
    assert text.count("skipped: outside the folders memory may import from") == 4


def test_kiln_run_from_a_subdirectory_uses_the_repository_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg" / "deep").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("ROOT RULE: say the magic word")
    (repo / "top.txt").write_text("visible from the root\n")
    git(repo, "init", "-q")
    script = [{"tool_calls": [{"name": "read_file", "input": {"path": "top.txt"}}]}, "done"]
    with WireServer(script) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
        env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.anthropic_base_url,
                   PYTHONPATH=str(ROOT), HOME=str(tmp_path / "home"))  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "read top.txt", "--mode", "yolo",
             "--output-format", "json"],
            cwd=repo / "pkg" / "deep", env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        first = srv.bodies("/v1/messages")[0]
    assert proc.returncode == 0, proc.stderr
    assert f"workspace is the repository root {repo} (cwd: pkg/deep)" in proc.stderr
    sent = json.dumps(first["messages"])
    assert "ROOT RULE: say the magic word" in sent
    assert "user_cwd: pkg/deep" in sent and f"workspace_root: {repo}" in sent
    result = json.loads(proc.stdout)
    assert result["exit_code"] == 0
