"""The HTML report of `workbench advise` (`workbench.experiments.advise.Advice.write_html`): what happened,
one row per setting with its paired differences and intervals, the plot inline, and the verdict."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from .plots import advice_plot, save_svg

__all__ = ["advice_html"]

#: The settings table's columns: (heading, column, kind).
_COLUMNS = (
    ("family", "family", ""),
    ("setting", "setting", ""),
    ("compactions", "compactions", "int"),
    ("$ vs what happened [95% CI]", "d_total_cost_usd", "usd"),
    ("re-acquired tokens vs what happened [95% CI]", "d_expected_recovery_tokens", "tok"),
    ("total $", "total_cost_usd", "usd_plain"),
    ("re-acquired tokens", "expected_recovery_tokens", "tok_plain"),
)


def _cell(row: pd.Series, column: str, kind: str) -> str:
    value = row.get(column)
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if kind in ("usd", "tok"):
        spec = "+,.2f" if kind == "usd" else "+,.0f"
        low, high = row.get(f"{column}_low"), row.get(f"{column}_high")
        bounds = "" if low is None or pd.isna(low) else f" [{format(low, spec)}, {format(high, spec)}]"
        return f"{'$' if kind == 'usd' else ''}{format(value, spec)}{bounds}"
    if kind == "usd_plain":
        return f"${value:,.2f}"
    if kind == "tok_plain":
        return f"{value:,.0f}"
    if kind == "int":
        return f"{int(value):,}"
    return str(value)


def advice_html(advice: Any) -> str:
    """A self-contained page (the plot as inline SVG) of an `Advice`."""
    figure = advice_plot(advice.settings)
    svg = save_svg(figure)
    svg = svg[svg.index("<svg") :]
    head = "".join(f"<th>{html.escape(title)}</th>" for title, _, _ in _COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(row, c, k))}</td>" for _, c, k in _COLUMNS) + "</tr>"
        for _, row in advice.settings.iterrows()
    )
    legend = "".join(
        f"<li><code>{html.escape(name)}</code>: {html.escape(text)}</li>"
        for name, text in advice.settings.attrs.get("columns", {}).items()
    )
    happened = "".join(f"<p>{html.escape(line)}</p>" for line in advice._happened_lines())
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in advice.notes)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>workbench advise</title>"
        "<style>body{font-family:sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}"
        "td:nth-child(-n+2),th:nth-child(-n+2){text-align:left}.verdict{font-size:1.2rem;font-weight:bold}</style>"
        "</head><body><h1>Your compaction settings</h1>"
        f"{happened}<p class='verdict'>Verdict: {html.escape(advice.verdict)}</p>"
        f"<figure>{svg}</figure>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        f"<h2>Columns</h2><ul>{legend}</ul>" + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "") + "</body></html>"
    )
