"""Readable names for (strategy, config) pairs: the one place every table, legend, heatmap and widget
takes them from.

A label is the strategy name plus the parameters that differ from the strategy's defaults, sorted by
key, compactly formatted::

    >>> config_label("sm-compact", {"min_tokens": 20_000, "trigger": {"pct_of_window": 60}})
    'sm-compact min_tokens=20k trigger=60%'
    >>> config_label("claude-code", {"sm": {"min_tokens": 20_000, "thinking_aware": True}})
    'claude-code sm.min_tokens=20k sm.thinking_aware=true'
    >>> config_label("sm-compact", {})
    'sm-compact'

Why not the config hash: a reader cannot tell ``sm-compact 2144de90c095`` from ``sm-compact
ef423e6f20`` without a lookup table. The hash stays the join key (``config_hash`` columns); the label
is for people. Formatting: integers that are whole thousands/millions as ``20k``/``1.5M`` (exactly:
``20_400`` is ``20.4k``, ``20_455`` stays ``20455``), keys containing ``pct``/``percent`` with ``%``,
booleans ``true``/``false``, ``None`` as ``none``, collections as ``[a,b]``, long strings cut to 24
characters. A nested key is its dotted path, except that a ``pct_of_window`` leaf is shown as its
parent (``trigger.pct_of_window=60`` → ``trigger=60%``: the plain %-of-window trigger). Two different
configs can in principle share a label (a cut string); `unique_labels` appends a short hash then.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["config_label", "format_value", "short_key", "unique_labels"]

#: Leaves shown under their parent's name (``trigger.pct_of_window`` → ``trigger``).
_AS_PARENT = {"pct_of_window": "trigger"}
_MAX_TEXT = 24


def _flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def short_key(path: str) -> str:
    """The displayed name of a dotted config key (``trigger.pct_of_window`` → ``trigger``)."""
    *parents, leaf = path.split(".")
    if leaf in _AS_PARENT:
        return ".".join(parents) if parents else _AS_PARENT[leaf]
    return path


def _number(value: int) -> str:
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if abs(value) >= size:
            for digits in range(3):
                if value % (size // 10**digits) == 0:
                    return f"{value / size:.{digits}f}{suffix}"
    return str(value)


def format_value(key: str, value: Any) -> str:
    """One parameter value, compact (see the module docstring); ``key`` decides whether it is a percentage."""
    leaf = key.rsplit(".", 1)[-1].lower()
    percent = "pct" in leaf or "percent" in leaf
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}%" if percent else _number(value)
    if isinstance(value, float):
        if percent:
            return f"{value:g}%"
        return _number(int(value)) if value.is_integer() and abs(value) >= 1000 else f"{value:g}"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        return "[" + ",".join(format_value(key, v) for v in items) + "]"
    if isinstance(value, Mapping):
        return "{}" if not value else json.dumps(value, sort_keys=True, default=str)
    text = str(value).replace("\n", " ")
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def _defaults(name: str) -> dict[str, Any] | None:
    from .registry import get_strategy

    try:
        return get_strategy(name).Config().model_dump(mode="json")
    except Exception:  # an unknown or unregistered strategy (e.g. a store from another installation)
        return None


def _resolved(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    from .registry import get_strategy

    out: dict[str, Any]
    try:
        out = get_strategy(name).Config(**dict(config)).model_dump(mode="json")
    except Exception:  # not valid for the registered class: label what was given
        out = json.loads(json.dumps(dict(config), default=str))
    return out


def config_label(
    name: str, config: Mapping[str, Any] | str | None = None, *, defaults: Mapping[str, Any] | None = None
) -> str:
    """``name`` plus the parameters of ``config`` (a dict or its JSON text) that differ from the defaults.

    ``config`` may be partial (``{"min_tokens": 20000}``) or resolved (defaults filled in); both give the
    same label. ``defaults`` (a resolved default config) is for a class that is not registered, e.g. one
    defined in a notebook; without it, a strategy that is not registered shows every given parameter.
    """
    if isinstance(config, str):
        config = json.loads(config) if config.strip() else {}
    config = dict(config or {})
    plain = json.loads(json.dumps(config, default=str))
    if defaults is not None:
        defaults, resolved = json.loads(json.dumps(dict(defaults), default=str)), plain
    else:
        defaults = _defaults(name)
        resolved = _resolved(name, config) if defaults is not None else plain
    flat, base = _flatten(resolved), _flatten(defaults or {})
    parts = [
        (short_key(key), format_value(key, value))
        for key, value in flat.items()
        if key not in base or base[key] != value
    ]
    return " ".join([name, *(f"{key}={value}" for key, value in sorted(parts))])


def unique_labels(rows: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{config_hash: label}`` for ``(config_hash, label)`` pairs, a label shared by several hashes
    made unique with ``#<first 6 hex digits>``."""
    pairs = dict(rows)
    counts: dict[str, int] = {}
    for label in pairs.values():
        counts[label] = counts.get(label, 0) + 1
    return {h: (f"{label} #{h[:6]}" if counts[label] > 1 else label) for h, label in pairs.items()}
