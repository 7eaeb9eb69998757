"""Experiment specs: YAML files naming a corpus, strategies, a parameter grid per strategy, an estimator.

A spec (``experiments/*.yaml``)::

    name: smoke
    corpus: ["${WORKBENCH_CORPUS}/claude-code"]   # ${VAR} / ${VAR:-default} expanded; relative to the spec file
    corpus_fallback: ["../data"]                   # used when no corpus path exists (unset variable, fresh machine)
    estimator: claude-rough
    metrics: [savings, validity, cost, fidelity, references]
    seed: 0
    max_sessions: null                             # keep the first N sessions (seeded shuffle when seed is set)
    strategies:
      - name: "*"                                   # every registered strategy at its defaults
      - name: sm-compact
        config: {thinking_aware: false}            # base config (dotted keys nest)
        grid:                                      # cartesian product, merged over the base config
          min_tokens: [5000, 10000]
          max_tokens: [20000, 40000]
          trigger.pct_of_window: [60, 80]
        skip_invalid: false                        # true: drop grid points the strategy's config rejects
    max_grid_points: 10000                         # refuse larger grids (counted before any is built)

Validation is strict: an unknown key anywhere, an unknown strategy, or a grid point the strategy's own
config rejects raises `SpecError` whose message names the file and the key (``smoke.yaml:
strategies[0].grid.min_tokenz: …``). Nothing falls back silently except ``corpus_fallback``, and that
choice is recorded (`ResolvedSpec.corpus_used_fallback`). ``format`` must name a registered loader.

The grid is counted before any point is built: a spec whose grids hold more than ``max_grid_points``
points (default `MAX_GRID_POINTS`; ``load_spec(max_grid_points=…)`` and ``workbench sweep
--max-grid-points`` override it) is refused with the count, instead of planning for hours without
output (a 30^5 grid).
"""

from __future__ import annotations

import itertools
import math
import os
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "MAX_GRID_POINTS",
    "METRIC_FAMILIES",
    "REFERENCE_COLUMNS",
    "CorpusSpec",
    "ExperimentSpec",
    "GridPoint",
    "ResolvedSpec",
    "SpecError",
    "StrategySpec",
    "expand_env",
    "load_spec",
    "nest",
    "read_yaml",
    "resolve_spec",
]

MetricName = Literal["savings", "validity", "cost", "fidelity", "references"]
#: The metric families a table can compute: ``fidelity`` is expected recovery (what the agent is expected to
#: re-acquire, `workbench.metrics.expected_recovery`), ``references`` the references kept (``needed_recall``,
#: `workbench.metrics.fidelity`), the costlier one: every record's text is read for facts.
METRIC_FAMILIES: tuple[MetricName, ...] = ("savings", "validity", "cost", "fidelity", "references")
#: The columns of the ``references`` family: a table that shows none of them need not compute it.
REFERENCE_COLUMNS = (
    "needed_facts",
    "needed_facts_kept",
    "dropped_facts",
    "dropped_facts_kept",
    "needed_recall",
    "dropped_recall",
)

#: Default limit on a spec's grid points (override per spec or per call).
MAX_GRID_POINTS = 10_000

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class SpecError(ValueError):
    """A spec that cannot be used; the message names the file and the offending key."""


class StrategySpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    config: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    skip_invalid: bool = False


class CorpusSpec(BaseModel):
    """What a sweep and a tuning run (`workbench.experiments.tune_spec.TuneSpec`) both read: the run's
    name, its corpus (paths, fallbacks, format), the estimator, the sampling seed and session cap."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    corpus: list[str] = Field(min_length=1)
    corpus_fallback: list[str] = Field(default_factory=list)
    format: str | None = None
    estimator: str = "claude-rough"
    seed: int = 0
    max_sessions: int | None = Field(None, gt=0)


class ExperimentSpec(CorpusSpec):
    metrics: list[MetricName] = Field(default_factory=lambda: list(METRIC_FAMILIES))
    max_grid_points: int = Field(MAX_GRID_POINTS, gt=0)
    strategies: list[StrategySpec] = Field(min_length=1)


@dataclass(frozen=True)
class GridPoint:
    """One (strategy, config) of a spec: the config as passed (grid values merged over the base) and
    as resolved by the strategy's validated config (defaults filled in)."""

    strategy: str
    passed: Mapping[str, Any]
    resolved: Mapping[str, Any]


@dataclass(frozen=True)
class ResolvedSpec:
    path: Path
    spec: ExperimentSpec
    corpus: tuple[Path, ...]
    corpus_used_fallback: bool
    points: tuple[GridPoint, ...]
    skipped: tuple[dict[str, Any], ...]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def estimator(self) -> str:
        return self.spec.estimator


def expand_env(text: str, environ: Mapping[str, str] | None = None) -> str | None:
    """``${VAR}`` and ``${VAR:-default}`` expanded; None when a variable without default is unset."""
    env = os.environ if environ is None else environ
    missing = False

    def sub(match: re.Match[str]) -> str:
        nonlocal missing
        value = env.get(match.group(1))
        if value:
            return value
        if match.group(2) is not None:
            return match.group(2)
        missing = True
        return ""

    out = _ENV.sub(sub, text)
    return None if missing else out


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys to nested dicts (``{"trigger.pct_of_window": 60}`` → ``{"trigger": {"pct_of_window": 60}}``)."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"{key}: {part} is not a mapping")
            node = child
        if isinstance(value, Mapping) and isinstance(node.get(leaf), dict):
            node[leaf] = {**node[leaf], **nest(value)}
        else:
            node[leaf] = nest(value) if isinstance(value, Mapping) else value
    return out


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _loc(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _errors(path: Path, prefix: str, exc: ValidationError) -> SpecError:
    parts = []
    for error in exc.errors():
        where = _loc([*([prefix] if prefix else []), *error["loc"]]) if error["loc"] or prefix else "(top level)"
        parts.append(f"{path}: {where}: {error['msg']}")
    return SpecError("\n".join(parts))


def _corpus(spec: ExperimentSpec, path: Path) -> tuple[tuple[Path, ...], bool]:
    def resolve(items: Sequence[str]) -> list[Path]:
        out = []
        for item in items:
            text = expand_env(item)
            if text is None:
                continue
            candidate = Path(text).expanduser()
            out.append(candidate if candidate.is_absolute() else (path.parent / candidate).resolve())
        return [p for p in out if p.exists()]

    found = resolve(spec.corpus)
    if found:
        return tuple(found), False
    fallback = resolve(spec.corpus_fallback)
    if fallback:
        return tuple(fallback), True
    raise SpecError(f"{path}: corpus: none of {spec.corpus + spec.corpus_fallback} exists")


def grid_size(spec: ExperimentSpec) -> int:
    """How many grid points the spec's strategies expand to (duplicates included), without building them."""
    from ..strategies import strategies

    total = 0
    for item in spec.strategies:
        if item.name == "*":
            total += len(strategies())
        else:
            total += math.prod(len(values) for values in item.grid.values())
    return total


def _check_grid_size(spec: ExperimentSpec, path: Path, limit: int) -> None:
    total = grid_size(spec)
    if total <= limit:
        return
    parts = []
    for index, item in enumerate(spec.strategies):
        if item.grid:
            sizes = " × ".join(str(len(v)) for v in item.grid.values())
            parts.append(
                f"strategies[{index}] {item.name}: {sizes} = {math.prod(len(v) for v in item.grid.values()):,}"
            )
    detail = f" ({'; '.join(parts)})" if parts else ""
    raise SpecError(
        f"{path}: strategies: the grid has {total:,} points{detail}, over the limit of {limit:,}; narrow the "
        "grid, or raise the limit (max_grid_points in the spec, or workbench sweep --max-grid-points N)"
    )


def _points(spec: ExperimentSpec, path: Path) -> tuple[list[GridPoint], list[dict[str, Any]]]:
    from ..strategies import get_strategy, strategies

    points: list[GridPoint] = []
    skipped: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(spec.strategies):
        where = f"strategies[{index}]"
        if item.name == "*":
            if item.config or item.grid:
                raise SpecError(f"{path}: {where}.name: '*' (every registered strategy) takes no config or grid")
            for name in sorted(strategies()):
                resolved = get_strategy(name).Config().model_dump(mode="json")
                from ..transcript.model import canonical_json

                if (name, canonical_json(resolved)) not in seen:
                    seen.add((name, canonical_json(resolved)))
                    points.append(GridPoint(name, {}, resolved))
            continue
        try:
            cls = get_strategy(item.name)
        except ValueError as exc:
            raise SpecError(f"{path}: {where}.name: {exc}") from None
        base = nest(item.config)
        keys = list(item.grid)
        for key in keys:
            if not item.grid[key]:
                raise SpecError(f"{path}: {where}.grid.{key}: empty list of values")
        for values in itertools.product(*(item.grid[k] for k in keys)) if keys else [()]:
            flat = dict(zip(keys, values, strict=True))
            passed = _merge(base, nest(flat))
            try:
                resolved = cls.Config(**passed).model_dump(mode="json")
            except ValidationError as exc:
                if item.skip_invalid and all(e["type"] != "extra_forbidden" for e in exc.errors()):
                    skipped.append({"strategy": item.name, "passed": passed, "reason": str(exc.errors()[0]["msg"])})
                    continue
                messages = []
                for error in exc.errors():
                    dotted = ".".join(str(p) for p in error["loc"])
                    section = "grid" if dotted in flat or any(k.startswith(dotted + ".") for k in flat) else "config"
                    messages.append(f"{path}: {where}.{section}.{dotted or '(config)'}: {error['msg']}")
                raise SpecError("\n".join(messages)) from None
            from ..transcript.model import canonical_json

            point_key = (item.name, canonical_json(resolved))
            if point_key in seen:
                continue
            seen.add(point_key)
            points.append(GridPoint(item.name, passed, resolved))
    return points, skipped


def load_spec(path: str | Path, *, max_grid_points: int | None = None) -> ResolvedSpec:
    """Read, validate and expand a spec file (see the module docstring); ``max_grid_points`` overrides
    the spec's limit on grid points."""
    path = Path(path)
    return resolve_spec(read_yaml(path), path, max_grid_points=max_grid_points)


def read_yaml(path: Path) -> Any:
    """A spec file's YAML (a sweep's or a tuning run's); a file that cannot be read or parsed is a
    `SpecError` naming it."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: {_yaml_problem(exc)}") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: where (line:column) and what, with the usual cause of a tab said plainly."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    if "\\t" in problem or "'\t'" in problem:
        problem = "a tab character (YAML indents with spaces only)"
    return f"not valid YAML: {where}{problem}"


def resolve_spec(data: Any, path: str | Path, *, max_grid_points: int | None = None) -> ResolvedSpec:
    """Validate and expand a spec given as a mapping (what `load_spec` read from ``path``; a notebook
    can pass a dict). Relative corpus paths resolve against ``path``'s folder; errors name ``path``;
    ``max_grid_points`` overrides the spec's limit on grid points."""
    path = Path(path)
    if not isinstance(data, Mapping):
        raise SpecError(f"{path}: (top level): expected a mapping, got {type(data).__name__}")
    try:
        spec = ExperimentSpec(**data)
    except ValidationError as exc:
        raise _errors(path, "", exc) from None
    from ..tokens.estimators import estimator_names

    if spec.estimator not in estimator_names():
        raise SpecError(
            f"{path}: estimator: unknown estimator {spec.estimator!r}; known: {', '.join(estimator_names())}"
        )
    if spec.format is not None:
        from ..transcript.registry import loaders

        known = sorted(loaders())
        if spec.format not in known:
            raise SpecError(f"{path}: format: unknown format {spec.format!r}; known: {', '.join(known)}")
    corpus, fallback = _corpus(spec, path)
    _check_grid_size(spec, path, max_grid_points or spec.max_grid_points)
    points, skipped = _points(spec, path)
    return ResolvedSpec(path, spec, corpus, fallback, tuple(points), tuple(skipped))


def sample_sessions(sessions: Sequence[Any], spec: ExperimentSpec) -> list[Any]:
    """The sessions a spec runs on: all, or ``max_sessions`` of them drawn with ``seed`` (stable order)."""
    items = sorted(sessions, key=lambda s: (s.id, str(s.source)))
    if spec.max_sessions is None or spec.max_sessions >= len(items):
        return items
    chosen = random.Random(spec.seed).sample(range(len(items)), spec.max_sessions)
    return [items[i] for i in sorted(chosen)]
