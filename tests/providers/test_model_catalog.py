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


async def test_the_embedded_provider_offers_only_what_it_can_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """KILN_MODEL names a hosted model; the local provider refuses any name but its own (or a
    GGUF file), so the picker must not offer KILN_MODEL as its current model."""
    monkeypatch.setenv("KILN_MODEL", "gpt-4o")
    listed = await catalog.list_models({"provider": "local"})
    assert listed["current"] == "smollm2-135m-instruct"
    assert [m["id"] for m in listed["models"]] == ["smollm2-135m-instruct"]
