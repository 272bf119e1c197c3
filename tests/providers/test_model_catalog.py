"""``agent.providers.catalog``: the list behind ``kiln/models/list`` when nothing is configured."""

from __future__ import annotations

import pytest

import agent.providers as providers
from agent.errors import ConfigError
from agent.providers import catalog


async def test_no_provider_configured_is_a_config_error_with_the_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("KILN_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(providers, "local_available", lambda: False)
    with pytest.raises(ConfigError) as caught:
        await catalog.list_models({})
    assert "no model provider is configured" in str(caught.value)
    assert "OPENAI_BASE_URL" in (caught.value.hint or "")


async def test_a_configured_model_is_listed_once_and_first(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("KILN_MODEL", "OPENAI_BASE_URL"):  # no compatible server: nothing is asked
        monkeypatch.delenv(var, raising=False)
    listed = await catalog.list_models({"provider": "openai", "model": "gpt-4o"})
    assert listed["source"] == "known" and "note" not in listed
    ids = [m["id"] for m in listed["models"]]
    assert ids[0] == "gpt-4o" and ids.count("gpt-4o") == 1
    assert listed["models"][0]["source"] == "configured"
