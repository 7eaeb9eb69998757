"""An answer a Claude Code user can act on: what their own history says about the compaction settings
they can change (``workbench advise PATH...``, ``wb.advise``).

What happened is Claude Code's full compaction at the threshold of the version that wrote each call, with
Claude's own summaries (``full-compact --set summarizer=recorded``: it reproduces every recorded automatic
compaction of the dev corpus, docs/replay.md, "Reality check"); each setting is the same replay with the setting
changed, so every difference is the setting's:

* ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P`` (``trigger.pct_override``): compact at P% of the effective window
  (it can only lower the threshold, anthropics/claude-code#31806);
* ``CLAUDE_CODE_AUTO_COMPACT_WINDOW=W`` (``trigger.auto_compact_window``): compute the threshold from a
  window of W tokens;

and both together. For each: compactions, dollars (the requests, the summaries, and the expected cost of
re-acquiring what was dropped: ``total_cost_usd``), expected re-acquisition in tokens, each as a paired
difference against what happened with a 95% bootstrap interval over sessions. The verdict names the
cheapest setting whose whole interval lies below zero without a worse expected re-acquisition beyond
noise, or says that no setting beats the current one beyond noise (a valid answer, and the common one on
few sessions). The search runs on the sweep engine (`workbench.experiments.tune.run_tune`: cached, so
asking again computes nothing twice).

Not modelled yet: session-memory compaction's keep window as a user setting, and ``/compact`` by hand
earlier; the HTML report.
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

__all__ = ["DEFAULT_SETTINGS", "Advice", "advise_sessions"]

#: The settings tried by default (None: as shipped).
DEFAULT_SETTINGS: dict[str, list[Any]] = {
    "trigger.pct_override": [None, 50, 60, 70, 80],
    "trigger.auto_compact_window": [None, 100_000, 150_000],
}
#: Config key → the environment variable a Claude Code user sets.
ENV = {
    "trigger.pct_override": "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
    "trigger.auto_compact_window": "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
}
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
            "verdict": self.verdict,
            "notes": list(self.notes),
        }

    def render(self) -> str:
        h = self.happened
        lines = [
            f"advise: {self.sessions} sessions. What happened (Claude Code's own thresholds, Claude's summaries): "
            f"{h['compactions']} compactions, ${h['total_cost_usd']:,.2f} in all (requests ${h['cost_usd']:,.2f}), "
            f"expected re-acquisition {h['expected_recovery_tokens']:,.0f} tokens",
            "",
            f"{'setting':<72}{'compactions':>12}{'$ vs now [95% CI]':>30}{'re-acquired tokens vs now [95% CI]':>40}",
        ]
        for row in self.settings.itertuples(index=False):
            lines.append(
                f"{row.setting:<72}{row.compactions:>12}"
                f"{_ci(row.d_total_cost_usd, row.d_total_cost_usd_low, row.d_total_cost_usd_high, '$'):>30}"
                f"{_ci(row.d_expected_recovery_tokens, row.d_expected_recovery_tokens_low, row.d_expected_recovery_tokens_high, ''):>40}"  # noqa: E501
            )
        lines += ["", f"verdict: {self.verdict}", *(f"note: {n}" for n in self.notes)]
        return "\n".join(lines)


def _ci(value: Any, low: Any, high: Any, unit: str) -> str:
    if value is None or pd.isna(value):
        return "-"

    def fmt(v: float) -> str:
        return f"{v:+,.2f}" if unit else f"{v:+,.0f}"

    bounds = "" if low is None or pd.isna(low) else f" [{fmt(low)}, {fmt(high)}]"
    return f"{unit}{fmt(value)}{bounds}" if unit else f"{fmt(value)}{bounds}"


def _setting(config: Mapping[str, Any]) -> str:
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
    store: str | Path,
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
    resamples: int = 2000,
    seed: int = 0,
) -> Advice:
    """The advice for ``sessions`` (Claude Code sessions; ``where``: their paths, for the spec)."""
    spec = TuneSpec(
        name="advise",
        corpus=list(where) or ["."],
        strategy="full-compact",
        config={"summarizer": "recorded"},
        space={k: list(v) for k, v in (settings or DEFAULT_SETTINGS).items()},
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
    reference = result.reference
    if reference is None:
        raise ValueError("advise: the replay of what happened is missing from the results")
    table = result.table
    per_session = result.per_session
    ref_hash = str(reference["config_hash"])
    diffs = paired_differences(per_session, ("full-compact", ref_hash), COMPARED, resamples=resamples, seed=seed)
    rows = []
    for row in table.to_dict("records"):
        if str(row["config_hash"]) == ref_hash:
            continue
        config = json.loads(row["config_json"]) if isinstance(row.get("config_json"), str) else {}
        out: dict[str, Any] = {
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
    frame = pd.DataFrame(rows)
    if len(frame):
        frame = frame.sort_values(["d_total_cost_usd", "setting"], na_position="last", kind="stable")
        frame = frame.reset_index(drop=True)
    frame.attrs["columns"] = {
        "total_cost_usd": "requests + summaries + the expected cost of re-acquiring what compaction dropped",
        "expected_recovery_tokens": "tokens the agent is expected to re-read or re-run after the compactions",
        "d_*": "the setting minus what happened, paired over sessions; _low/_high: 95% bootstrap interval",
    }
    happened = {
        key: (None if reference.get(key) is None or pd.isna(reference.get(key)) else float(reference[key]))
        for key in ("cost_usd", "total_cost_usd", "recovery_cost_usd", "expected_recovery_tokens", "saved_share")
    }
    happened["compactions"] = int(reference.get("compactions") or 0)
    return Advice(
        sessions=result.sessions,
        happened=happened,
        settings=frame,
        verdict=_verdict(frame),
        notes=[n for n in result.notes if "recommendation" not in n],  # the tune's own pick is not the verdict
    )


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
