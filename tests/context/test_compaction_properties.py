"""Property: whatever identifiers and decisions the conversation held, a compaction keeps them
verbatim in the context (the summariser here is a model that returns nothing useful)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.compaction import SUMMARY_MARKER, CompactionConfig, Compactor
from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, DiskHost, Session
from agent.types import canonical_json
from tests.context.conftest import big_module, call

HASH = st.from_regex(r"[0-9a-f]{7,40}", fullmatch=True).filter(
    lambda h: any(c.isdigit() for c in h) and any(c.isalpha() for c in h)
)
URL = st.from_regex(
    r"https://[a-z]{3,10}\.(com|org|io)/[a-z0-9_/-]{0,20}(\?id=[0-9]{1,4})?", fullmatch=True
)
PATH = st.from_regex(r"(src|lib|tests)/[a-z_]{1,10}(/[a-z_]{1,10})?\.(py|ts|rs|go)", fullmatch=True)
TICKET = st.from_regex(r"[A-Z]{2,6}-[0-9]{1,6}", fullmatch=True)
NUMBER = st.one_of(st.integers(10, 10**9).map(str), st.decimals("0.01", "9999", places=2).map(str))
DECISION = st.sampled_from(
    [
        "We decided to keep the retry limit at {n}.",
        "Constraint: never call the payments API from tests.",
        "The user prefers tabs over spaces in {p}.",
        "We must not change the public signature of {p}.",
    ]
)


def run(planted: dict[str, str], decision: str) -> tuple[str, str]:
    text = (
        f"Found {planted['ticket']} in {planted['path']} (commit {planted['hash']}); "
        f"see {planted['url']} — the count is {planted['number']}. {decision}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a.py").write_text(big_module("a", 200))
        script = [
            {"match": SUMMARY_MARKER, "text": "Looked at some files."},
            {"match": SUMMARY_MARKER, "text": "Looked at some files."},
            {"text": text, **call("read_file", path="a.py")},
            call("read_file", path="a.py", limit=5),
            "ok",
            call("list_files"),
            call("list_files"),
            "done",
        ]
        model = ScriptedModel(script)
        session = Session.create(
            root, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model
        )
        asyncio.run(session.prompt("Look at a.py"))
        asyncio.run(session.prompt(f"Also: {decision} Ticket {planted['ticket']}."))
        model.context_window = 4000
        record = asyncio.run(Compactor(CompactionConfig(keep_rounds=1)).compact(session))
        assert record is not None and record.removed_messages > 0
        return canonical_json(session.transcript.messages), session.transcript.messages[0][
            "content"
        ][-1]["text"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ticket=TICKET, path=PATH, hash_=HASH, url=URL, number=NUMBER, decision=DECISION)
def test_identifiers_and_decisions_survive_verbatim(
    ticket: str, path: str, hash_: str, url: str, number: str, decision: str
) -> None:
    planted = {"ticket": ticket, "path": path, "hash": hash_, "url": url, "number": number}
    decision = decision.format(n=number, p=path)
    _, history = run(planted, decision)
    for name, value in planted.items():
        assert value in history, f"{name} {value!r} lost"
    assert decision in history
    assert f"Also: {decision} Ticket {ticket}." in history  # the user's own words
