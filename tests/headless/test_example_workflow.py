"""docs/examples/kiln-fix.yml does what its header says: "comment /kiln … on an issue or pull
request, or let a failing build ask Kiln to fix it". The build half was missing (no
`workflow_run` trigger), so a new user who copied it waited for a fix that never started. A
failed run is taken only on this repository's own code, at the commit that failed."""

from __future__ import annotations

from pathlib import Path

import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "kiln-fix.yml"


def test_the_example_starts_on_what_its_header_promises() -> None:
    text = EXAMPLE.read_text()
    header = " ".join(ln.lstrip("# ") for ln in text.splitlines() if ln.startswith("#"))
    workflow = yaml.safe_load(text)
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "comment" in header and "issue_comment" in triggers
    assert "failing build" in header and "workflow_run" in triggers
    assert triggers["workflow_run"]["types"] == ["completed"]
    job = workflow["jobs"]["kiln"]
    condition = " ".join(job["if"].split())
    assert "github.event.workflow_run.conclusion == 'failure'" in condition
    assert "github.event.workflow_run.head_repository.full_name == github.repository" in condition
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["ref"] == "${{ github.event.workflow_run.head_sha }}"
    assert checkout["with"]["persist-credentials"] is False
