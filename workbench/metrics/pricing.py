"""Prices: the dated table in ``workbench/data/pricing.csv`` (USD per million tokens; its header names the
date and the source) and the lookup by model id, exact then by family without the date suffix."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["DEFAULT_MODEL", "Price", "known_price", "load_pricing", "price_for", "price_or_none"]

DEFAULT_MODEL = "claude-opus-4-6"


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
        )
    return table


def price_for(model: str | None, pricing: Mapping[str, Price] | None = None, default: str = DEFAULT_MODEL) -> Price:
    """Exact model match, else the same family without a date suffix, else ``default``."""
    table = pricing or load_pricing()
    return known_price(model, table) or table[default]


def known_price(model: Any, pricing: Mapping[str, Price]) -> Price | None:
    """The price of a *named* model (exact, then family without date suffix); None when the model is
    not in the table (e.g. a GPT model in a SWE-agent trajectory) or unnamed."""
    if not isinstance(model, str) or not model:  # formats without a model name (NaN in frames)
        return None
    if model in pricing:
        return pricing[model]
    stem = model.split("[")[0].rstrip("-0123456789")
    for name, price in pricing.items():
        if name.startswith(stem) or name.rstrip("-0123456789") == stem:
            return price
    return None


def price_or_none(model: Any, pricing: Mapping[str, Price], default: str) -> Price | None:
    """No model name: the default model's price (Claude Code transcripts name theirs; an unnamed call is
    priced like the session). A named model that is not priced: None, so the cost is "not available"
    (NaN), never a made-up number."""
    if not isinstance(model, str) or not model:
        return pricing[default]
    return known_price(model, pricing)
