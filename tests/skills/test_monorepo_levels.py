"""A monorepo package's own skills count when the session works there, the repository root's
too: `kiln run` started in a package folder (the workspace is the repository root) and a
workspace that is the package folder itself. Real `kiln run` processes against the wire server;
the catalog is read from the request the real ``anthropic`` SDK sent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]


def _skill(folder: Path, name: str, about: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {about}\n---\nBody.\n")


def _first_request(tmp_path: Path, cwd: Path, *args: str) -> str:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("KILN_", "ANTHROPIC_", "OPENAI_"))
    }
    with WireServer(["ok"]) as server:
        env.update(KILN_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT),
                   ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)  # fmt: skip
        proc = subprocess.run([sys.executable, "-m", "lsp_server", "run", *args, "hi"], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return server.requests[0].raw.decode()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "mono"
    (repo / ".git").mkdir(parents=True)
    _skill(repo / ".kiln" / "skills" / "release", "release", "Cut a release of the monorepo.")
    _skill(repo / ".kiln" / "skills" / "lint", "lint", "Lint the whole repository.")
    api = repo / "services" / "api"
    _skill(api / ".claude" / "skills" / "migrate", "migrate", "Run the api's migrations.")
    _skill(api / ".kiln" / "skills" / "lint", "lint", "Lint the api package only.")
    _skill(repo / "services" / "web" / ".kiln" / "skills" / "bundle", "bundle", "Bundle web.")
    return repo


def test_run_from_a_package_folder_sees_its_skills(tmp_path: Path, repo: Path) -> None:
    sent = _first_request(tmp_path, repo / "services" / "api")
    assert "Cut a release of the monorepo." in sent and "Run the api's migrations." in sent
    assert "Lint the api package only." in sent  # the nearest skill of a name wins
    assert "Lint the whole repository." not in sent
    assert "Bundle web." not in sent  # another package's skills are not the session's


def test_a_workspace_below_the_repository_root_sees_the_roots_skills(
    tmp_path: Path, repo: Path
) -> None:
    sent = _first_request(tmp_path, tmp_path, "--root", str(repo / "services" / "api"))
    assert "Cut a release of the monorepo." in sent and "Lint the api package only." in sent
    at_root = _first_request(tmp_path, repo)
    assert "Run the api's migrations." not in at_root and "Lint the whole repository." in at_root
