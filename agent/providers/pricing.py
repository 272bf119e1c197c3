"""What a turn cost, from measured usage and a small price table.

Prices are USD per million tokens, per model family, matched by the longest prefix of the model
id (so dated ids like ``claude-sonnet-4-5-20250929`` find their family). The table is a
planning aid, not a bill: an unknown model costs 0 and ``price_note`` says so, rather than
guessing.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.types import Usage


@dataclass(frozen=True)
class Price:
    input: float
    cache_read: float
    cache_write: float
    output: float


# Family prefix -> price. Longest matching prefix wins. OpenAI charges nothing extra to write
# its automatic cache, so cache_write equals 0 there (the provider never reports writes).
PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 0.50, 6.25, 25.0),
    "claude-opus-4": Price(15.0, 1.50, 18.75, 75.0),
    "claude-sonnet-4": Price(3.0, 0.30, 3.75, 15.0),
    "claude-3-7-sonnet": Price(3.0, 0.30, 3.75, 15.0),
    "claude-3-5-sonnet": Price(3.0, 0.30, 3.75, 15.0),
    "claude-haiku-4-5": Price(1.0, 0.10, 1.25, 5.0),
    "claude-3-5-haiku": Price(0.80, 0.08, 1.0, 4.0),
    "gpt-4.1": Price(2.0, 0.50, 0.0, 8.0),
    "gpt-4.1-mini": Price(0.40, 0.10, 0.0, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.025, 0.0, 0.40),
    "gpt-4o": Price(2.50, 1.25, 0.0, 10.0),
    "gpt-4o-mini": Price(0.15, 0.075, 0.0, 0.60),
    "gpt-5": Price(1.25, 0.125, 0.0, 10.0),
    "gpt-5-mini": Price(0.25, 0.025, 0.0, 2.0),
    "gpt-5-nano": Price(0.05, 0.005, 0.0, 0.40),
    # Runs on this machine or is fake: free, and known to be.
    "smollm2": Price(0.0, 0.0, 0.0, 0.0),
    "scripted": Price(0.0, 0.0, 0.0, 0.0),
}


CACHE_BLOCK = 128  # tokens


def price_for(model: str) -> Price | None:
    """The price of the longest family prefix of ``model`` (``provider/`` prefixes ignored)."""
    key = model.lower().rsplit("/", 1)[-1]
    best = ""
    for family in PRICES:
        if key.startswith(family) and len(family) > len(best):
            best = family
    return PRICES[best] if best else None


def cost_usd(model: str, usage: Usage) -> float:
    """USD for ``usage`` on ``model``; 0.0 when the model is not in the table."""
    price = price_for(model)
    if price is None:
        return 0.0
    return (
        usage.input_tokens * price.input
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
        + usage.output_tokens * price.output
    ) / 1_000_000


def input_cost_usd(model: str, prompt_tokens: int, cached_tokens: int) -> float:
    """What the input of a request of ``prompt_tokens`` tokens is estimated to cost on ``model``:
    the share the provider may serve from its cache at the cache-read price (what the previous
    request sent, ``cached_tokens``, less one cache block: the end of that prompt is not the
    start of the next, and OpenAI caches in steps of 128 tokens), the rest at the input price,
    or at the cache-write price where that is higher (Anthropic writes the new part to its
    cache). 0.0 for an unknown model."""
    price = price_for(model)
    if price is None:
        return 0.0
    cached = min(max(cached_tokens - CACHE_BLOCK, 0), prompt_tokens)
    fresh = max(price.input, price.cache_write)
    return (cached * price.cache_read + (prompt_tokens - cached) * fresh) / 1_000_000


def price_note(model: str) -> str:
    """Empty when the price is known; otherwise a short sentence to show next to a 0 cost."""
    if price_for(model) is None:
        return f"no price known for model {model!r}; its cost is counted as 0"
    return ""
