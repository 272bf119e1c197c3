"""Every `KILN_…` environment variable the user docs tell people to set is one the code reads
(Python, the editor extensions, the Action's scripts): a renamed variable leaves no sentence
behind that silently does nothing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "agent/README.md",
    ROOT / "extensions/vscode/README.md",
    ROOT / "extensions/nvim/doc/kiln.txt",
]
CODE = [
    *ROOT.glob("*/**/*.py"),
    *(ROOT / "extensions/vscode/src").rglob("*.ts"),
    *(ROOT / "extensions/vscode/test").rglob("*.ts"),
    *(ROOT / "extensions/nvim").rglob("*.lua"),
    *(ROOT / "action").glob("*.sh"),
    ROOT / "action.yml",
]


def test_documented_environment_variables_are_read_by_the_code() -> None:
    documented = {
        v for doc in DOCS for v in re.findall(r"\bKILN_[A-Z][A-Z_]*[A-Z]\b", doc.read_text())
    }
    assert {"KILN_HOME", "KILN_PROVIDER", "KILN_REGISTRY"} <= documented
    code = "\n".join(
        p.read_text(errors="replace")
        for p in CODE
        if "node_modules" not in p.parts and "tests" not in p.relative_to(ROOT).parts[:1]
    )
    unread = sorted(v for v in documented if not re.search(rf"\b{v}\b", code))
    assert not unread, f"the docs name variables no code reads: {unread}"
