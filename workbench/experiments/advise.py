"""An answer a Claude Code user can act on: what their own history says about the compaction settings
they can change (``workbench advise PATH...``, ``wb.advise``).

What happened is Claude Code's full compaction at the threshold of the version that wrote each call, with
Claude's own summaries (``full-compact --set summarizer=recorded``: it reproduces every recorded automatic
compaction of the dev corpus, docs/replay.md, "Reality check"); beside it, what the recording shows the agent
re-read after Claude Code's own compactions (`workbench.metrics.recovery`) and what the user was billed
(`workbench.metrics.bill`, = ccusage). Each setting is the same replay with the setting changed, so every
difference is the setting's. Three families:

* **threshold**: ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P`` (``trigger.pct_override``: compact at P% of the
  effective window; it can only lower the threshold, anthropics/claude-code#31806) and
  ``CLAUDE_CODE_AUTO_COMPACT_WINDOW=W`` (``trigger.auto_compact_window``: the threshold from a window of W
  tokens), each and both together;
* **by hand**: ``/compact`` typed at the first new user turn once the context passes P% of the window
  (``compact_by_hand_at``; the automatic compaction still fires at its threshold);
* **session memory**: ``ENABLE_CLAUDE_CODE_SM_COMPACT=1`` (the ``claude-code`` strategy with
  ``session_memory`` on, Claude's own summaries where it still falls back to a full compaction), with the
  default keep window and others. The keep window (``minTokens``/``maxTokens``) is not a user setting: it
  comes from the remote config ``tengu_sm_compact_config`` (docs/claude-code.md §2.1), so those rows say what
  that config would do. This family is paired against the same model with session memory off, which equals
  what happened on the dev corpus (same compactions, same costs).

For each: compactions, dollars (the requests, the summaries, and the expected cost of re-acquiring what was
dropped: ``total_cost_usd``), expected re-acquisition in tokens, each as a paired difference against what
happened with a 95% bootstrap interval over sessions. The verdict names the cheapest setting whose whole
interval lies below zero without a worse expected re-acquisition beyond noise, or says that no setting beats
the current one beyond noise (a valid answer, and the common one on few sessions). The search runs on the
sweep engine (`workbench.experiments.tune.run_tune`: cached, so asking again computes nothing twice).
`Advice.write_html` writes the report with its plot.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..metrics.uncertainty import paired_differences
from .tune import run_tune
from .tune_spec import TuneSpec

__all__ = ["DEFAULT_FAMILIES", "DEFAULT_SETTINGS", "Advice", "Family", "advise_sessions"]

#: The threshold settings tried by default (None: as shipped).
DEFAULT_SETTINGS: dict[str, list[Any]] = {
    "trigger.pct_override": [None, 50, 60, 70, 80],
    "trigger.auto_compact_window": [None, 100_000, 150_000],
}
#: Config key → the environment variable a Claude Code user sets.
ENV = {
    "trigger.pct_override": "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
    "trigger.auto_compact_window": "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
}
#: Claude's own summaries where Claude Code compacted, so what happened is reproduced.
RECORDED = {"summarizer": "recorded"}


@dataclass(frozen=True)
class Family:
    """One kind of setting: a strategy, the base config that reproduces what happened, and the grid."""

    name: str
    strategy: str
    config: Mapping[str, Any]
    space: Mapping[str, Sequence[Any]]


#: The families tried by default (module docstring).
DEFAULT_FAMILIES: tuple[Family, ...] = (
    Family("threshold", "full-compact", RECORDED, DEFAULT_SETTINGS),
    Family("by hand", "full-compact", RECORDED, {"compact_by_hand_at": [50, 60, 70]}),
    Family(
        "session memory",
        "claude-code",
        {"session_memory": False, "sm": {"full_compact": RECORDED}},
        {"session_memory": [True], "sm.min_tokens": [10_000, 20_000], "sm.max_tokens": [40_000, 80_000]},
    ),
)
#: The keep window Claude Code ships (docs/claude-code.md §2.1).
SM_DEFAULT_WINDOW = (10_000, 40_000)
#: The columns compared with what happened (lower is better for each).
COMPARED = ("total_cost_usd", "expected_recovery_tokens")


@dataclass
class Advice:
    """What `advise_sessions` found. ``happened``: the pooled columns of the replay that reproduces the
    recording; ``settings``: one row per setting with its pooled columns and paired differences; ``verdict``:
    one sentence."""

    sessions: int
    happened: dict[str, Any]
    settings: pd.DataFrame
    verdict: str
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        rows = json.loads(self.settings.to_json(orient="records"))
        return {
            "sessions": self.sessions,
            "happened": self.happened,
            "settings": rows,
            "columns": dict(self.settings.attrs.get("columns", {})),
            "verdict": self.verdict,
            "notes": list(self.notes),
        }

    def _happened_lines(self) -> list[str]:
        h = self.happened
        lines = [
            f"advise: {self.sessions} sessions. What happened (Claude Code's own thresholds, Claude's summaries): "
            f"{h['compactions']} compactions, ${h['total_cost_usd']:,.2f} in all (requests ${h['cost_usd']:,.2f}), "
            f"expected re-acquisition {h['expected_recovery_tokens']:,.0f} tokens",
        ]
        if h.get("recorded_compactions"):
            lines.append(
                f"In the recording: {h['recorded_compactions']} compactions by Claude Code, after which the agent "
                f"re-read or re-ran {h['measured_recovery_calls']:,} things ({h['measured_recovery_tokens']:,} "
                "tokens)"
                + (f"; billed ${h['recorded_cost_usd']:,.2f} (ccusage's figure)" if h.get("recorded_cost_usd") else "")
            )
        return lines

    def render(self) -> str:
        lines = [
            *self._happened_lines(),
            "",
            f"{'setting':<80}{'compactions':>12}{'$ vs now [95% CI]':>30}{'re-acquired tokens vs now [95% CI]':>40}",
        ]
        for row in self.settings.itertuples(index=False):
            lines.append(
                f"{row.setting:<80}{row.compactions:>12}"
                f"{_ci(row.d_total_cost_usd, row.d_total_cost_usd_low, row.d_total_cost_usd_high, '$'):>30}"
                f"{_ci(row.d_expected_recovery_tokens, row.d_expected_recovery_tokens_low, row.d_expected_recovery_tokens_high, ''):>40}"  # noqa: E501
            )
        lines += ["", f"verdict: {self.verdict}", *(f"note: {n}" for n in self.notes)]
        return "\n".join(lines)

    def plot(self) -> Any:
        """Each setting's paired difference in dollars (x) and in expected re-acquired tokens (y) against what
        happened (the origin), with their 95% intervals; points labelled, the families in colours."""
        from ..reporting.plots import advice_plot

        return advice_plot(self.settings)

    def write_html(self, path: str | Path) -> Path:
        """A self-contained HTML report: what happened, the settings table, the plot (inline SVG), the verdict."""
        from ..reporting.advice import advice_html

        out = Path(path)
        out.write_text(advice_html(self), encoding="utf-8")
        return out


def _ci(value: Any, low: Any, high: Any, unit: str) -> str:
    if value is None or pd.isna(value):
        return "-"

    def fmt(v: float) -> str:
        return f"{v:+,.2f}" if unit else f"{v:+,.0f}"

    bounds = "" if low is None or pd.isna(low) else f" [{fmt(low)}, {fmt(high)}]"
    return f"{unit}{fmt(value)}{bounds}" if unit else f"{fmt(value)}{bounds}"


def _setting(config: Mapping[str, Any]) -> str:
    """What a user would set (or ask for) to get ``config``."""
    if config.get("session_memory"):
        sm = config.get("sm") or {}
        window = (sm.get("min_tokens", SM_DEFAULT_WINDOW[0]), sm.get("max_tokens", SM_DEFAULT_WINDOW[1]))
        if window == SM_DEFAULT_WINDOW:
            return "ENABLE_CLAUDE_CODE_SM_COMPACT=1"
        return f"ENABLE_CLAUDE_CODE_SM_COMPACT=1, keep window {window[0]:,}-{window[1]:,} (remote config)"
    if config.get("compact_by_hand_at") is not None:
        return f"/compact by hand at the next turn past {config['compact_by_hand_at']:g}% of the window"
    trigger = config.get("trigger") or {}
    parts = []
    for key, env in ENV.items():
        value = trigger.get(key.split(".", 1)[1])
        if value is not None:
            parts.append(f"{env}={value:g}" if isinstance(value, float) else f"{env}={value}")
    return " ".join(parts) or "as shipped"


def advise_sessions(
    sessions: Sequence[Any],
    *,
    where: Sequence[str],
    settings: Mapping[str, Sequence[Any]] | None = None,
    families: Sequence[Family] | None = None,
    store: str | Path,
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
    resamples: int = 2000,
    seed: int = 0,
) -> Advice:
    """The advice for ``sessions`` (Claude Code sessions; ``where``: their paths, for the spec).

    ``families`` (default `DEFAULT_FAMILIES`); ``settings`` replaces the threshold family's grid."""
    chosen = list(families or DEFAULT_FAMILIES)
    if settings is not None:
        chosen = [Family(f.name, f.strategy, f.config, settings) if f.name == "threshold" else f for f in chosen]
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    happened: dict[str, Any] | None = None
    n = 0
    for family in chosen:
        result, reference = _family_tune(family, sessions, where, store, executor, workers, progress, resamples, seed)
        n = max(n, result.sessions)
        if happened is None:
            happened = _happened(reference, sessions)
        rows.extend(_family_rows(family, result, reference, resamples, seed))
        notes.extend(n for n in result.notes if "recommendation" not in n and n not in notes)  # said once
    frame = pd.DataFrame(rows)
    if len(frame):
        frame = frame.sort_values(["d_total_cost_usd", "setting"], na_position="last", kind="stable")
        frame = frame.reset_index(drop=True)
    frame.attrs["columns"] = {
        "family": "threshold (environment variables), by hand (/compact), session memory (SM compaction)",
        "setting": "what a user sets or does; a keep window other than 10,000-40,000 is remote config, not a setting",
        "total_cost_usd": "requests + summaries + the expected cost of re-acquiring what compaction dropped",
        "expected_recovery_tokens": "tokens the agent is expected to re-read or re-run after the compactions",
        "d_*": "the setting minus what happened, paired over sessions; _low/_high: 95% bootstrap interval",
    }
    assert happened is not None
    return Advice(sessions=n, happened=happened, settings=frame, verdict=_verdict(frame), notes=notes)


def _family_tune(
    family: Family,
    sessions: Sequence[Any],
    where: Sequence[str],
    store: str | Path,
    executor: str,
    workers: int | None,
    progress: bool,
    resamples: int,
    seed: int,
) -> tuple[Any, pd.Series]:
    spec = TuneSpec(
        name=f"advise-{family.name.replace(' ', '-')}",
        corpus=list(where) or ["."],
        strategy=family.strategy,
        config=dict(family.config),
        space={k: list(v) for k, v in family.space.items()},
        objective="-total_cost_usd",
        axes={"savings": "saved_share", "fidelity": "expected_recovery_tokens", "cost": "total_cost_usd"},
        constraints={"added_violating_steps": "== 0"},
        bootstrap=max(100, resamples),
        seed=seed,
    )
    result = run_tune(
        spec,
        Path.cwd() / "advise.yaml",
        sessions=list(sessions),
        store=store,
        executor=executor,
        workers=workers,
        progress=progress,
    )
    if result.reference is None:
        raise ValueError(f"advise: the replay of what happened ({family.name}) is missing from the results")
    return result, result.reference


def _family_rows(family: Family, result: Any, reference: pd.Series, resamples: int, seed: int) -> list[dict[str, Any]]:
    """One row per setting of ``family``, with its paired differences against the family's reference."""
    ref_hash = str(reference["config_hash"])
    key = (family.strategy, ref_hash)
    diffs = paired_differences(result.per_session, key, COMPARED, resamples=resamples, seed=seed)
    rows = []
    for row in result.table.to_dict("records"):
        if str(row["config_hash"]) == ref_hash:
            continue
        config = json.loads(row["config_json"]) if isinstance(row.get("config_json"), str) else {}
        out: dict[str, Any] = {
            "family": family.name,
            "setting": _setting(config),
            "config_hash": row["config_hash"],
            "compactions": int(row.get("compactions") or 0),
            "total_cost_usd": row.get("total_cost_usd"),
            "expected_recovery_tokens": row.get("expected_recovery_tokens"),
            "added_violating_steps": int(row.get("added_violating_steps") or 0),
        }
        mine = diffs[diffs["config_hash"].astype(str) == str(row["config_hash"])]
        for metric in COMPARED:
            found = mine[mine["metric"] == metric]
            first = found.iloc[0] if len(found) else None
            out[f"d_{metric}"] = None if first is None else first["difference"]
            out[f"d_{metric}_low"] = None if first is None else first["ci_low"]
            out[f"d_{metric}_high"] = None if first is None else first["ci_high"]
        rows.append(out)
    return rows


def _happened(reference: pd.Series, sessions: Sequence[Any]) -> dict[str, Any]:
    """The replay that reproduces the recording (pooled), what the recording shows the agent re-acquired after
    Claude Code's own compactions, and what the user was billed."""
    from ..metrics.bill import bill_row
    from ..metrics.pricing import load_pricing
    from ..metrics.recovery import recovery_rows

    out: dict[str, Any] = {
        key: (None if reference.get(key) is None or pd.isna(reference.get(key)) else float(reference[key]))
        for key in ("cost_usd", "total_cost_usd", "recovery_cost_usd", "expected_recovery_tokens", "saved_share")
    }
    out["compactions"] = int(reference.get("compactions") or 0)
    measured = [row for session in sessions for row in recovery_rows(session)]
    out["recorded_compactions"] = len(measured)
    out["measured_recovery_calls"] = sum(int(r.get("recovery_calls") or 0) for r in measured)
    out["measured_recovery_tokens"] = sum(int(r.get("recovery_tokens") or 0) for r in measured)
    pricing = load_pricing()
    billed = [bill_row(session, pricing).get("recorded_cost_usd") for session in sessions]
    known = [float(b) for b in billed if b is not None and not pd.isna(b)]
    out["recorded_cost_usd"] = sum(known) if known else None
    return out


def _verdict(frame: pd.DataFrame) -> str:
    """The cheapest setting that saves money beyond noise without more re-acquisition beyond noise."""
    if frame.empty:
        return "no setting was tried"
    better = frame[
        (frame["d_total_cost_usd_high"].astype(float) < 0)
        & ~(frame["d_expected_recovery_tokens_low"].astype(float) > 0)
        & (frame["added_violating_steps"] == 0)
    ]
    if better.empty:
        return "no setting beats your current one beyond noise (every saving's 95% interval reaches zero)"
    best = better.iloc[0]
    return (
        f"{best['setting']} would have cost ${-best['d_total_cost_usd']:,.2f} less "
        f"[95% CI ${-best['d_total_cost_usd_high']:,.2f}, ${-best['d_total_cost_usd_low']:,.2f}] "
        f"with expected re-acquisition {best['d_expected_recovery_tokens']:+,.0f} tokens"
    )
