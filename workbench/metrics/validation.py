"""Validate the fidelity scores against behaviour: do they predict what the agent really re-acquired?

Ground truth: the recorded compactions of the corpus and what the agent re-read after each
(`workbench.metrics.recovery`). Two levels:

* **Per compaction** (`compaction_table`, `score_correlations`): each score of Claude's recorded summary
  (``needed_recall``, ``dropped_recall``, ``section_coverage`` of `reference_fidelity`) and the
  counterfactual estimate of the ``recorded`` strategy (``expected_recovery_tokens``) against the
  measured ``recovery_tokens``. Spearman's rank correlation with its ``n``, a two-sided permutation
  p-value (10,000 permutations, seed 0) and a 95% bootstrap interval over compactions. A fidelity
  score that means "kept what the agent needs" should correlate *negatively* with recovery. Note the
  counterfactual estimate is computed from the same recorded future, so its agreement here checks its
  bookkeeping (first re-read per file, segments, the carried-content rule), not a forecast.
* **Each measure against its own measured side** (`measure_correlations`, `CHECKS`): the estimate's
  recovery calls against the measured ``recovery_calls``; its repeated searches, fetches and sub-agent
  calls (``expected_repeated_calls``) against the measured ``repeated_calls``; and the user instructions
  the recorded summary kept (``instructions_kept``, ``instructions_lost``, ``last_request_kept`` of
  `workbench.metrics.instructions`) against the instructions the user restated after the compaction
  (``instructions_repeated``). The instruction scores are a forecast: what the summary held against
  what the user later typed.
* **Per file** (`file_table`, `file_predictors`): every file ``Read`` in the segment before a boundary,
  whether it was re-read after it (``reread``), and the binary predictors the scores rest on:
  ``path_in_summary`` (its path fact is present in the summary the way ``needed_recall`` checks it),
  ``mentioned`` (named by path, relative path or basename), ``content_carried`` (half its content
  quoted: the expected-recovery rule), ``reattach_candidate`` (one of the files Claude Code's
  post-compact re-attachment would pick: the 5 most recently read within budget, docs §5.4, emulated
  by `post_compact_file_attachments`). For each: the re-read rate when true and when false, and a
  two-sided Fisher exact p-value.

The sample is small (the open corpus: 15 recorded compactions in 8 Claude Code sessions, 12 of them followed
by a user prompt): the docs state ``n`` beside every figure and says which score to trust for what.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..strategies.full_compact import FullCompactConfig, post_compact_file_attachments
from ..transcript.model import Session
from .acquisitions import acquisitions
from .carried import content_carried, mentions
from .expected_recovery import expected_recovery_events
from .facts import Fact, FactIndex, _path_key
from .fidelity import reference_fidelity
from .instructions import instructions_events
from .recovery import recovery

__all__ = [
    "CHECKS",
    "FILE_COLUMNS",
    "SCORES",
    "compaction_table",
    "file_predictors",
    "file_table",
    "fisher_exact",
    "measure_correlations",
    "score_correlations",
    "spearman",
]

#: The per-compaction scores validated, with the sign a useful score should have against recovery.
SCORES = {
    "needed_recall": "-",
    "dropped_recall": "-",
    "section_coverage": "-",
    "summary_tokens": "-",
    "read_files_before": "+",
    "expected_recovery_tokens": "+",
}

#: Each predicted measure against the measured quantity it predicts: (score, target, useful sign).
CHECKS = (
    ("expected_recovery_calls", "recovery_calls", "+"),
    ("expected_repeated_calls", "repeated_calls", "+"),
    ("instructions_kept", "instructions_repeated", "-"),
    ("instructions_lost", "instructions_repeated", "+"),
    ("last_request_kept", "instructions_repeated", "-"),
)
#: The predicted instruction measures `compaction_table` takes from `instructions_events`.
_INSTRUCTION_SCORES = ["instructions", "instructions_lost", "instructions_kept", "last_request_kept"]


def _recorded_events(session: Session) -> list[dict[str, Any]]:
    from ..replay import replay_session
    from ..strategies import create

    return replay_session(session, create("recorded")).events


def compaction_table(sessions: Iterable[Session], *, estimator: str = "claude-rough") -> pd.DataFrame:
    """One row per recorded compaction: measured recovery, Claude's summary's scores, the estimate."""
    items = list(sessions)
    measured = recovery(items, estimator=estimator)
    if measured.empty:
        return measured
    measured["event"] = measured.groupby("session_id")["line"].rank(method="first").astype(int) - 1
    reference = reference_fidelity(items)
    reference = reference[reference["source"] == "compact-summary"]
    scores = reference[["session_id", "event", "needed_recall", "dropped_recall", "section_coverage", "summary_tokens"]]
    table = measured.merge(scores, on=["session_id", "event"], how="left")
    table["repeated_calls"] = table["repeated_searches"] + table["repeated_fetches"] + table["repeated_tasks"]
    by_id = {s.id: s for s in items}
    estimates = []
    kept = []
    for sid in sorted(set(table["session_id"])):
        events = _recorded_events(by_id[sid])
        frame = expected_recovery_events(by_id[sid], events, estimator=estimator)
        columns = ["expected_recovery_tokens", "expected_recovery_calls", "expected_repeated_calls"]
        estimates.append(frame[["session_id", "event", *columns]])
        kept.append(instructions_events(by_id[sid], events)[["session_id", "event", *_INSTRUCTION_SCORES]])
    table = table.merge(pd.concat(estimates, ignore_index=True), on=["session_id", "event"], how="left")
    table = table.merge(pd.concat(kept, ignore_index=True), on=["session_id", "event"], how="left")
    files = file_table(items)
    counts = files.groupby(["session_id", "event"]).size().rename("read_files_before").reset_index()
    table = table.merge(counts, on=["session_id", "event"], how="left")
    table["read_files_before"] = table["read_files_before"].fillna(0).astype(int)
    return table


def spearman(
    x: Sequence[float], y: Sequence[float], *, permutations: int = 10_000, resamples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """Spearman's rho with n, a two-sided permutation p-value and a 95% bootstrap interval."""
    frame = pd.DataFrame({"x": x, "y": y}).dropna()
    n = len(frame)
    out: dict[str, Any] = {"n": n, "rho": None, "p_permutation": None, "ci_low": None, "ci_high": None}
    if n < 3 or frame["x"].nunique() < 2 or frame["y"].nunique() < 2:
        return out
    rx = frame["x"].rank().to_numpy()
    ry = frame["y"].rank().to_numpy()

    def rho(a: np.ndarray, b: np.ndarray) -> float:
        a = a - a.mean()
        b = b - b.mean()
        den = math.sqrt(float((a * a).sum() * (b * b).sum()))
        return float((a * b).sum() / den) if den else float("nan")

    observed = rho(rx, ry)
    rng = np.random.default_rng(seed)
    perms = np.array([rho(rx, rng.permutation(ry)) for _ in range(permutations)])
    p = (1 + int((np.abs(perms) >= abs(observed) - 1e-12).sum())) / (permutations + 1)
    boots = []
    xs, ys = frame["x"].to_numpy(), frame["y"].to_numpy()
    for _ in range(resamples):
        index = rng.integers(0, n, n)
        a, b = pd.Series(xs[index]).rank().to_numpy(), pd.Series(ys[index]).rank().to_numpy()
        value = rho(a, b)
        if not math.isnan(value):
            boots.append(value)
    low, high = np.quantile(boots, [0.025, 0.975]) if boots else (None, None)
    out.update(
        rho=observed,
        p_permutation=p,
        ci_low=None if low is None else float(low),
        ci_high=None if high is None else float(high),
    )
    return out


def score_correlations(table: pd.DataFrame, target: str = "recovery_tokens") -> pd.DataFrame:
    """Spearman of each score in `SCORES` against ``target`` over the compactions of ``table``."""
    rows = []
    for score, sign in SCORES.items():
        if score not in table.columns:
            continue
        result = spearman(table[score].astype(float), table[target].astype(float))
        rows.append({"score": score, "useful_sign": sign, "target": target, **result})
    return pd.DataFrame(rows)


def measure_correlations(table: pd.DataFrame) -> pd.DataFrame:
    """Spearman of each predicted measure in `CHECKS` against the measured quantity it predicts."""
    rows = []
    for score, target, sign in CHECKS:
        if score not in table.columns or target not in table.columns:
            continue
        result = spearman(table[score].astype(float), table[target].astype(float))
        rows.append({"score": score, "useful_sign": sign, "target": target, **result})
    return pd.DataFrame(rows)


def _path_fact(path: str) -> Fact:
    return Fact("path", _path_key(path), path, frozenset())


#: The columns of `file_table` (also when it has no row: a compaction with no file read before it).
FILE_COLUMNS = (
    "session_id",
    "event",
    "line",
    "path",
    "reread",
    "path_in_summary",
    "mentioned",
    "content_carried",
    "reattach_candidate",
)


def file_table(sessions: Iterable[Session]) -> pd.DataFrame:
    """One row per (recorded compaction, file Read in the segment before it), columns `FILE_COLUMNS`."""
    rows = []
    config = FullCompactConfig()
    for session in sessions:
        if session.is_subagent:
            continue
        records = session.conversation()
        boundaries = [i for i, r in enumerate(records) if r.is_compact_boundary]
        found = acquisitions(records)
        edges = [-1, *boundaries, len(records)]
        for number, cut in enumerate(boundaries):
            start, end = edges[number], edges[number + 2]
            summary = next((r.text for r in records[cut + 1 : end] if r.is_compact_summary), "")
            index = FactIndex([summary])
            attach = {
                a.key
                for a in acquisitions(post_compact_file_attachments(records[start + 1 : cut], config))
                if a.kind == "read"
            }
            attach |= _attached_paths(records[start + 1 : cut], config)
            before: dict[str, Any] = {}
            for a in found:
                if a.kind == "read" and start < a.index < cut:
                    before[a.key] = a
            after = {a.key for a in found if a.kind == "read" and cut < a.index < end}
            for path, last in before.items():
                rows.append(
                    {
                        "session_id": session.id,
                        "event": number,
                        "line": records[cut].line_no,
                        "path": path,
                        "reread": path in after,
                        "path_in_summary": _path_fact(path) in index if "/" in _path_key(path) else False,
                        "mentioned": mentions(path, "read", summary),
                        "content_carried": content_carried(last.result_text, summary),
                        "reattach_candidate": path in attach,
                    }
                )
    return pd.DataFrame(rows, columns=list(FILE_COLUMNS))


def _attached_paths(records: Sequence[Any], config: FullCompactConfig) -> set[str]:
    """Paths whose content `post_compact_file_attachments` would re-attach (not the too-large notes)."""
    out = set()
    for record in post_compact_file_attachments(records, config):
        text = record.text
        if "Result of calling the Read tool" not in text:
            continue
        head = text.split("\n", 2)[1] if "\n" in text else ""
        marker = '"file_path":"'
        if marker in head:
            out.add(head.split(marker, 1)[1].split('"', 1)[0])
    return out


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher exact p-value of the 2×2 table [[a, b], [c, d]]."""
    n = a + b + c + d
    row, col = a + b, a + c

    def prob(x: int) -> float:
        return math.comb(row, x) * math.comb(n - row, col - x) / math.comb(n, col)

    observed = prob(a)
    low, high = max(0, col - (n - row)), min(row, col)
    return min(1.0, sum(prob(x) for x in range(low, high + 1) if prob(x) <= observed * (1 + 1e-9)))


def file_predictors(files: pd.DataFrame) -> pd.DataFrame:
    """Per binary predictor: files and re-read rate when it is true / false, and Fisher's p."""
    rows = []
    for predictor in ("path_in_summary", "mentioned", "content_carried", "reattach_candidate"):
        if files.empty or predictor not in files.columns:
            continue
        yes = files[files[predictor]]
        no = files[~files[predictor]]
        a, b = int(yes["reread"].sum()), int((~yes["reread"]).sum())
        c, d = int(no["reread"].sum()), int((~no["reread"]).sum())
        rows.append(
            {
                "predictor": predictor,
                "files": len(files),
                "true": len(yes),
                "reread_if_true": a / len(yes) if len(yes) else None,
                "false": len(no),
                "reread_if_false": c / len(no) if len(no) else None,
                "p_fisher": fisher_exact(a, b, c, d) if len(yes) and len(no) else None,
            }
        )
    return pd.DataFrame(rows)
