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


READS = [
    r"environ(?:\.get)?[(\[]\s*\"([A-Z][A-Z0-9_]*[A-Z0-9])\"",
    r"getenv\(\s*\"([A-Z][A-Z0-9_]*[A-Z0-9])\"",
    r"envvar=\"([A-Z][A-Z0-9_]*[A-Z0-9])\"",
    r"(?:_var|_VAR|_ENV)\s*=\s*\"([A-Z][A-Z0-9_]*[A-Z0-9])\"",
]
USER_FACING = ("KILN_", "ANTHROPIC_", "OPENAI_", "AZURE_OPENAI_")


def test_variables_the_code_reads_are_documented() -> None:
    """The other way round: `KILN_BWRAP` (which bubblewrap the sandbox runs),
    `KILN_REGISTRY_SIGNING_KEY_FILE` (`--signing-key` from the environment) and
    `ANTHROPIC_BASE_URL` (how to point Kiln at a proxy or a local server) were read but named
    on no page a user reads."""
    code = "\n".join(
        p.read_text(errors="replace")
        for package in ("agent", "indexer", "skills_registry", "lsp_server", "kiln_errors")
        for p in (ROOT / package).rglob("*.py")
        if "testing" not in p.relative_to(ROOT).parts
    )
    read = {v for pattern in READS for v in re.findall(pattern, code)}
    read = {v for v in read if v.startswith(USER_FACING)}
    assert {"KILN_HOME", "ANTHROPIC_API_KEY", "KILN_MCP_CALL_TIMEOUT"} <= read
    docs = "\n".join(doc.read_text() for doc in [*DOCS, ROOT / "lsp_server/PROTOCOL.md"])
    readme = (ROOT / "README.md").read_text()  # a provider's variables: where providers are set up
    undocumented = sorted(
        v for v in read
        if not re.search(rf"\b{v}\b", docs if v.startswith("KILN_") else readme)
    )  # fmt: skip
    assert not undocumented, f"read by the code, named in no user doc: {undocumented}"
