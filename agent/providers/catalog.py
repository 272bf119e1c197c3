"""The models a configured provider offers, for a model picker.

The list is the configured model first, then the provider's known models (a short table kept
beside the price table), or, for an OpenAI-compatible server (``OPENAI_BASE_URL`` / a
``base_url`` in the config), the ids its ``GET /models`` answers, asked through the openai SDK
with a short timeout. When that request fails the known list is returned with a ``note`` that
says so. Nothing here loads a local model or contacts a hosted API.
"""

from __future__ import annotations

import os
from typing import Any

from agent.providers import choose_provider

LIST_TIMEOUT = 3.0

KNOWN: dict[str, tuple[str, ...]] = {
    "anthropic": (
        "claude-sonnet-4-6",
        "claude-opus-4-5",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
    ),
    "openai": (
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
    ),  # fmt: skip
    "local": ("smollm2-135m-instruct",),
    "scripted": ("scripted",),
}


async def list_models(config: dict[str, Any], *, timeout: float = LIST_TIMEOUT) -> dict[str, Any]:
    """``{"provider", "current", "source", "models": [{"id", "source"}], "note"?}``.

    ``source`` is ``"server"`` when the ids came from the server's ``/models``, else
    ``"known"``. Raises ConfigError when no provider is configured."""
    provider = choose_provider(config)
    current = _current(provider, config)
    ids: list[tuple[str, str]] = []
    source, note = "known", None
    if provider == "openai" and _base_url(config):
        try:
            served = await _served_models(config, timeout)
        except Exception as exc:  # noqa: BLE001 - any failure falls back, and says so
            reason = str(exc).strip() or type(exc).__name__
            note = f"the server at {_base_url(config)} did not list its models ({reason}); showing known models"
        else:
            ids = [(m, "server") for m in served]
            source = "server"
    if source == "known":
        ids = [(m, "known") for m in KNOWN.get(provider, ())]
    models: list[dict[str, str]] = []
    seen: set[str] = set()
    if current:
        models.append({"id": current, "source": "configured"})
        seen.add(current)
    for model_id, origin in ids:
        if model_id not in seen:
            models.append({"id": model_id, "source": origin})
            seen.add(model_id)
    result: dict[str, Any] = {
        "provider": provider,
        "current": current,
        "source": source,
        "models": models,
    }
    if note:
        result["note"] = note
    return result


def _current(provider: str, config: dict[str, Any]) -> str | None:
    # KILN_MODEL names a hosted model; the embedded provider runs only its own (or a GGUF file).
    env = os.environ.get("KILN_MODEL") if provider != "local" else None
    if provider == "azure":  # a deployment's name, which Kiln cannot guess
        env = env or os.environ.get("AZURE_OPENAI_DEPLOYMENT")
    model = config.get("model") or env
    if model:
        return str(model)
    if provider == "anthropic":
        from agent.providers.anthropic import DEFAULT_MODEL as anthropic_default

        return anthropic_default
    if provider == "openai":
        from agent.providers.openai import DEFAULT_MODEL as openai_default

        return openai_default
    known = KNOWN.get(provider)
    return known[0] if known else None


def _base_url(config: dict[str, Any]) -> str | None:
    return config.get("base_url") or os.environ.get("OPENAI_BASE_URL") or None


async def _served_models(config: dict[str, Any], timeout: float) -> list[str]:
    from kiln_errors.settled_imports import settled_imports

    key = config.get("api_key") or os.environ.get("OPENAI_API_KEY") or "not-needed"
    with settled_imports("openai models"):
        import openai

        client = openai.AsyncOpenAI(
            api_key=key, base_url=_base_url(config), max_retries=0, timeout=timeout
        )
        _ = client.models
    try:
        page = await client.models.list()
        return sorted(str(m.id) for m in page.data if getattr(m, "id", None))
    finally:
        await client.close()
