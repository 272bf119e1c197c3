"""Registry search over real HTTP: stemmed OR queries ranked by BM25, names first, CJK text."""

from __future__ import annotations

import httpx

from skills_registry.archive import ArchiveContents, build_archive
from tests.registry.conftest import LiveRegistry

SKILLS = {
    "pdf": "Combine several PDFs into one, split them apart, fill PDF forms and extract tables.",
    "xlsx": "Spreadsheet editing with formulas, charts and cleanup of tabular data (.xlsx, .csv).",
    "docx": "Create and edit Word documents with tracked changes and comments.",
    "notes": "Writes meeting notes; can attach a pdf export of the minutes.",
    "zh-report": "帮助撰写中文工作报告、周报和月度总结。",
}


def _search(reg: LiveRegistry, query: str) -> list[str]:
    body = httpx.get(f"{reg.url}/v1/skills", params={"q": query, "limit": 3}).json()
    return [s["name"] for s in body["skills"]]


def test_search_finds_what_users_type(registry: LiveRegistry) -> None:
    token = registry.token("acme")
    for name, description in SKILLS.items():
        md = f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n".encode()
        response = httpx.put(
            f"{registry.url}/v1/skills/acme/{name}/versions/1.0.0",
            content=build_archive(ArchiveContents(name, {"SKILL.md": md})),
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 201, response.text
    assert _search(registry, "merge pdf")[0] == "pdf"  # OR: "merge" matches nothing
    assert "pdf" in _search(registry, "pdf documents")  # was missed: AND of both words
    assert _search(registry, "excel")[0] == "xlsx"  # format alias
    assert _search(registry, "make a word doc")[0] == "docx"  # stop words dropped, prefix
    assert _search(registry, "extracting table")[0] == "pdf"  # stemmed: extract, tables
    assert _search(registry, "写周报") == ["zh-report"]  # CJK bigrams
    assert _search(registry, "quantum chromodynamics") == []
