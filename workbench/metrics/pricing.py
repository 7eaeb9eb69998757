"""Prices: the dated table in ``workbench/data/pricing.csv`` (USD per million tokens; its header names the
date and the source), the lookup by model id (exact, then by family without the date suffix) and
`tokens_dollars`, the price of one response's tokens.

**Models the table lacks** (what users run through these agents: GPT models in Codex rollouts,
``deepseek-v4-flash``, ``claude-opus-4.6-1m`` ids of third-party gateways, Gemini models) are priced from
`genai-prices <https://github.com/pydantic/genai-prices>`_, pydantic's maintained price database, read
offline from the snapshot its package ships (`database_price`). The table stays first for the Claude rows so
that ``recorded_cost_usd`` stays equal to ccusage (docs/metrics.md); the database prices a model the table
lacks with its own base and 200k-tier rates, through `tokens_dollars` like every other row. A model neither
knows is unpriced: its cost is null, never a made-up number.

**Long context.** Models with a 1M-token context window (Sonnet 4 and 4.5 in the table) charge more for
tokens beyond 200k. `tokens_dollars` applies it the way ccusage 20 does (``rust/crates/ccusage/src/cost.rs``,
``tiered_cost``, read at ryoppippi/ccusage@5816e640): *each token kind of one response separately* — the
first 200,000 tokens of that kind at the base rate, the rest at the ``*_200k`` rate — and the 1-hour cache
write at twice the input rate (``CACHE_CREATE_1H_INPUT_MULTIPLIER``). Anthropic's pricing page states the
rule per request (a request whose input exceeds 200k tokens is priced at the long-context rates as a whole);
we mirror ccusage so that ``recorded_cost_usd`` is the figure Claude Code users see, and use the same rule
in the simulation so the two stay comparable (docs/metrics.md says what the other rule would change).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = [
    "DEFAULT_MODEL",
    "LONG_CONTEXT_THRESHOLD",
    "Price",
    "database_price",
    "known_price",
    "load_pricing",
    "price_for",
    "price_or_none",
    "tokens_dollars",
]

DEFAULT_MODEL = "claude-opus-4-6"
#: Tokens of one kind in one response above which the long-context rate applies (ccusage ``tiered_cost``).
LONG_CONTEXT_THRESHOLD = 200_000


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    model: str
    input: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    output: float
    certain: bool = True
    input_200k: float | None = None
    cache_write_5m_200k: float | None = None
    cache_write_1h_200k: float | None = None
    cache_read_200k: float | None = None
    output_200k: float | None = None
    source: str = "table"  # "table" (workbench/data/pricing.csv) or "genai-prices <version>"


def _optional(value: str | None) -> float | None:
    return float(value) if value not in (None, "") and str(value).strip() else None


def _tiered(tokens: float, base: float, above: float | None) -> float:
    """ccusage's ``tiered_cost``: tokens of one kind, the part above 200k at the long-context rate."""
    if above is not None and tokens > LONG_CONTEXT_THRESHOLD:
        return LONG_CONTEXT_THRESHOLD * base + (tokens - LONG_CONTEXT_THRESHOLD) * above
    return tokens * base


def tokens_dollars(
    price: Price,
    *,
    input: float = 0,
    cache_write_5m: float = 0,
    cache_write_1h: float = 0,
    cache_read: float = 0,
    output: float = 0,
) -> float:
    """Dollars of one response's tokens (long-context tiers per token kind, as ccusage 20)."""
    return (
        _tiered(input, price.input, price.input_200k)
        + _tiered(cache_write_5m, price.cache_write_5m, price.cache_write_5m_200k)
        + _tiered(cache_write_1h, price.cache_write_1h, price.cache_write_1h_200k)
        + _tiered(cache_read, price.cache_read, price.cache_read_200k)
        + _tiered(output, price.output, price.output_200k)
    ) / 1e6


def load_pricing(path: str | None = None) -> dict[str, Price]:
    """The pricing table (package data unless ``path`` is given), by model id."""
    if path is None:
        text = resources.files("workbench").joinpath("data/pricing.csv").read_text(encoding="utf-8")
    else:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    table = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        table[row["model"]] = Price(
            row["model"],
            float(row["input"]),
            float(row["cache_write_5m"]),
            float(row["cache_write_1h"]),
            float(row["cache_read"]),
            float(row["output"]),
            row.get("certain", "yes").strip() == "yes",
            input_200k=_optional(row.get("input_200k")),
            cache_write_5m_200k=_optional(row.get("cache_write_5m_200k")),
            cache_write_1h_200k=_optional(row.get("cache_write_1h_200k")),
            cache_read_200k=_optional(row.get("cache_read_200k")),
            output_200k=_optional(row.get("output_200k")),
        )
    return table


def price_for(model: str | None, pricing: Mapping[str, Price] | None = None, default: str = DEFAULT_MODEL) -> Price:
    """Exact model match, else the same family without a date suffix, else ``default``."""
    table = pricing or load_pricing()
    return known_price(model, table) or table[default]


def known_price(model: Any, pricing: Mapping[str, Price]) -> Price | None:
    """The price of a *named* model: the table (exact, then family without date suffix), else the price
    database (`database_price`); None when neither knows it or the model is unnamed."""
    if not isinstance(model, str) or not model:  # formats without a model name (NaN in frames)
        return None
    if model in pricing:
        return pricing[model]
    stem = model.split("[")[0].rstrip("-0123456789")
    for name, price in pricing.items():
        if name.startswith(stem) or name.rstrip("-0123456789") == stem:
            return price
    return database_price(model)


@lru_cache(maxsize=1024)
def database_price(model: str) -> Price | None:
    """``model``'s price from genai-prices' shipped snapshot (no network), or None when it does not know the
    model. Cache writes it does not list are priced as input (5 minutes) and as the 5-minute write (1 hour);
    cache reads it does not list as input; a tier starting at 200k tokens is the long-context rate."""
    try:
        from genai_prices import Usage, __version__, calc_price
    except ImportError:  # pragma: no cover (a hard dependency; an install without it prices the table only)
        return None
    try:
        found = calc_price(Usage(input_tokens=1), model).model_price
    except LookupError:
        return None

    def rate(name: str) -> tuple[float | None, float | None]:
        value = getattr(found, name, None)
        if value is None:
            return None, None
        if hasattr(value, "tiers"):
            above = next((t.price for t in value.tiers if t.start == LONG_CONTEXT_THRESHOLD), None)
            return float(value.base), float(above) if above is not None else None
        return float(value), None

    (base_in, in_200k), (base_out, out_200k) = rate("input_mtok"), rate("output_mtok")
    if base_in is None or base_out is None:
        return None
    write, write_200k = rate("cache_write_mtok")
    write_1h, write_1h_200k = rate("cache_write_1h_mtok")
    read, read_200k = rate("cache_read_mtok")
    write = base_in if write is None else write
    return Price(
        model,
        base_in,
        write,
        write if write_1h is None else write_1h,
        base_in if read is None else read,
        base_out,
        True,
        in_200k,
        write_200k,
        write_1h_200k,
        read_200k,
        out_200k,
        source=f"genai-prices {__version__}",
    )


def price_or_none(model: Any, pricing: Mapping[str, Price], default: str) -> Price | None:
    """No model name: the default model's price (Claude Code transcripts name theirs; an unnamed call is
    priced like the session). A named model that is not priced: None, so the cost is "not available"
    (NaN), never a made-up number."""
    if not isinstance(model, str) or not model:
        return pricing[default]
    return known_price(model, pricing)
