"""A session resumed without `--model` goes on with the model it was started with: another
model reads none of the prompt cache the session built (caches are per model), prices the turn
differently and answers differently in the middle of a task. `--model` on the resume switches (KILN_MODEL
does not: like the provider, the stored model wins over the environment), and the session
records the switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.session_store import SessionStore
from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_a_resumed_session_keeps_its_model(tmp_path: Path, api: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with WireServer(["one", "two", "three"]) as srv:
        runs = KilnRuns(tmp_path, srv, api)
        runs.env.pop("KILN_MODEL", None)
        runs.turn(root, "first", KILN_MODEL="model-chosen-at-start")
        runs.turn(root, "second", KILN_MODEL="model-from-the-environment")
        models = [b["model"] for b in srv.bodies()]
        assert models == ["model-chosen-at-start"] * 2
        runs.turn(root, "third", "--model", "model-switched-to")
        assert srv.bodies()[-1]["model"] == "model-switched-to"
    store = SessionStore(tmp_path / "home" / "sessions.db")
    assert store.get(runs.session)["model"] == "model-switched-to"
