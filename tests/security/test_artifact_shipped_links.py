"""`kiln run --ci --artifacts out/` where the checkout itself ships a link at `out` or at a folder
above it: the repository's author chooses where it points (a folder outside the workspace, a
file the runner owns, a folder not made yet). Such a path is refused before the run, one line and
exit 2, and nothing is written or made where the link points. A link the checkout ships at an
output's own name (`out/summary.md`) is replaced by the output, never written through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.repos import committing_repo, git
from tests.security.scripted_run import kiln_run


def shipped(tmp_path: Path, links: dict[str, Path]) -> Path:
    """A repository whose last commit holds ``links`` (name in the checkout -> target)."""
    root = tmp_path / "repo"
    committing_repo(root)("init", {"calc.py": "def add(a, b):\n    return a - b\n"})
    for name, target in links.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(target)
    git(root, "add", "-A")
    git(
        root, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "--allow-empty", "-qm", "links"
    )
    return root


def run_ci(root: Path, tmp_path: Path, kiln_home: Path, artifacts: str):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "Nothing to do."}]))
    return kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
        extra=("--ci", "--artifacts", artifacts),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("links", "artifacts"),
    [
        ({"out": "outside"}, "out"),  # the folder itself
        ({"out": "outside"}, "out/"),
        ({"build": "outside"}, "build/kiln"),  # a folder above it
        ({"out": "outside/new"}, "out"),  # a folder not made yet: mkdir would make it there
        ({"out": "victim"}, "out"),  # a file the runner owns
        ({"sub/out": "outside"}, "sub/out/../out"),  # through the link and back
    ],
)
def test_a_link_the_checkout_ships_on_the_artifacts_path_is_refused_before_the_run(
    tmp_path: Path, kiln_home: Path, host_dir: Path, links: dict[str, str], artifacts: str
) -> None:
    outside = host_dir / "outside"
    outside.mkdir()
    victim = host_dir / "victim"
    victim.write_text("the runner's file\n")
    root = shipped(tmp_path, {name: host_dir / target for name, target in links.items()})
    proc = run_ci(root, tmp_path, kiln_home, artifacts)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kiln: --artifacts "), proc.stderr
    assert "link" in lines[0], proc.stderr
    assert json.loads(proc.stdout)["stop_reason"] == "not_started"
    assert sorted(p.name for p in host_dir.iterdir()) == ["outside", "victim"]
    assert list(outside.iterdir()) == [], "Kiln wrote where the checkout's link points"
    assert victim.read_text() == "the runner's file\n"


def test_links_above_the_checkout_are_followed(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    """A link the runner made outside the workspace (a temp folder's alias) is not the
    checkout's to choose: the outputs go where it points."""
    root = shipped(tmp_path, {})
    (host_dir / "real").mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(host_dir / "real")
    proc = run_ci(root, tmp_path, kiln_home, str(alias / "out"))
    assert proc.returncode == 11, proc.stderr
    assert (host_dir / "real" / "out" / "summary.md").is_file()


def test_a_link_shipped_at_an_outputs_name_is_replaced(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    victim = host_dir / "bashrc"
    victim.write_text("# the user's shell startup\n")
    names = ("summary.md", "report.json", "changes.patch", "transcript.jsonl")
    root = shipped(tmp_path, {f"out/{name}": victim for name in names})
    proc = run_ci(root, tmp_path, kiln_home, "out")
    assert proc.returncode == 11, proc.stderr
    assert victim.read_text() == "# the user's shell startup\n", "Kiln wrote through a link"
    for name in names:
        assert not (root / "out" / name).is_symlink() and (root / "out" / name).is_file()
