"""Repeating a word in a skill's description or name ranks it no higher, on each backend pair.

Search ranks with bm25 (SQLite) and a weighted tsvector (PostgreSQL), and bm25 counts how often
a word occurs: a publisher's description of `pdf` 150 times ranked above a skill named
`pdf-tools` for `pdf`, and above the same skill with `pdf` once. Each skill's search text now
holds each word once (`sqlite_schema.search_text`), so stuffing gains nothing.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.registry.conftest import LiveRegistry, make_skill, publish_skill


def test_a_stuffed_description_ranks_no_higher_than_the_same_words_once(
    backend_registry: LiveRegistry, tmp_path: Path
) -> None:
    def publish(name: str, description: str, namespace: str) -> None:
        folder = make_skill(tmp_path / namespace, name, description=description)
        publish_skill(backend_registry, folder, "1.0.0", namespace=namespace)

    publish("pdf-tools", "Extract text and tables from PDF files, fill PDF forms.", "acme")
    publish("aide", "pdf extract tables forms", "evil")  # the words once
    publish("helper", " ".join(["pdf"] * 150) + " extract tables forms", "evil")
    publish("pdfs", "Tables.", "evil")  # a name of that word once
    publish("pdfs-pdfs-pdfs", "Tables.", "evil")  # the same, repeated
    ranked = {}
    for query in ("pdf", "pdf tables", "pdfs"):
        found = httpx.get(f"{backend_registry.url}/v1/skills", params={"q": query}).json()
        ranked[query] = [s["id"] for s in found["skills"]]
    for query in ("pdf", "pdf tables"):
        order = ranked[query]
        assert order.index("evil/aide") < order.index("evil/helper"), (query, order)
    assert ranked["pdf"].index("acme/pdf-tools") < ranked["pdf"].index("evil/helper"), ranked
    # a tie keeps the order of publishing: the repeated name comes after its twin, never before
    assert ranked["pdfs"].index("evil/pdfs") < ranked["pdfs"].index("evil/pdfs-pdfs-pdfs"), ranked
